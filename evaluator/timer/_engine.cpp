/* The per-call path of an evaluation, in compiled code: one module for the judge's baseline and the solution's ranks.
 *
 * A step (warm-up or trial call, or a timed iteration) reads its inputs from the side's feed slot, a file the judge
 * wrote at the opening of the side's window, into tensors allocated here for this call alone (their storage never
 * seen by the code under test), and zeroes the feed; on GPUs keeps the device busy with the spin kernel, flushes L2,
 * aligns the ranks on the process group's backend (no dispatcher in between) and only then fills the call's inputs,
 * on the call's stream. Where the side has a device feed, the inputs are not in this process at all until then: the
 * call's stream reaches a gate in the feed, and the judge's gate (in a CUDA context the judge keeps for the gates)
 * spins and only then writes the call's inputs into the feed, under tensors made here for this call, and opens the
 * gate. Then the step records the start, calls the function, records the stop, copies the outputs into the side's output slot on the call's stream (a
 * window of several calls takes each call's outputs as that call returns), checks that every input still owns the
 * storage it was given, and reports. On a solution's rank, serve() runs every step after the solution is loaded,
 * reading the host's commands itself: no Python of the evaluator's runs there again, so nothing a solution rebinds
 * takes part.
 *
 * Anything the previous step leaves behind (its arguments, its result) is released inside the next step's window,
 * after its start is recorded: finalizers a solution attaches run on its clock. Timing samples go to a descriptor the
 * host opened, framed and keyed with SipHash-2-4 under a key drawn here before any solution code ran. CUDA is reached
 * through the driver API (libcuda), so this builds with a C++ compiler and torch's headers alone.
 */
#include <torch/extension.h>
#include <ATen/EmptyTensor.h>
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <nmmintrin.h>
#include <wmmintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace py = pybind11;

// ---- the command read: one system-call instruction that the host and the channel lock both know -----------------
// Between two of the host's commands a rank's main thread is blocked here and nowhere else. The host, with the ranks
// stopped after each reply, finds its program counter at arena_read_command_return and (on x86_64) serve()'s call
// as its return address, both read from this built file (evaluator/host/engine_sites.py); the channel lock refuses
// a read of the command channel made from any other instruction. A solution whose call never returned and that
// answers the host's commands with code of its own waits somewhere else; one that jumps here with a forged return
// address resumes serve() on a frame of its own when the read returns, and serve() then runs the calls, on the clock.
// A leaf in assembly: a C function around the system call would have a caller of its own, a second place to return.
extern "C" long arena_read_command(int fd, void *buf, size_t n);
#if defined(__x86_64__)
asm(".text\n"
    ".p2align 4\n"
    ".globl arena_read_command\n"
    ".hidden arena_read_command\n"
    ".type arena_read_command, @function\n"
    "arena_read_command:\n"
    "  xorl %eax, %eax\n"  // read(2)
    "  syscall\n"
    ".globl arena_read_command_return\n"
    ".hidden arena_read_command_return\n"
    "arena_read_command_return:\n"
    "  ret\n"
    ".size arena_read_command, .-arena_read_command\n");
#elif defined(__aarch64__)
asm(".text\n"
    ".p2align 4\n"
    ".globl arena_read_command\n"
    ".hidden arena_read_command\n"
    ".type arena_read_command, %function\n"
    "arena_read_command:\n"
    "  mov x8, #63\n"  // read(2)
    "  svc #0\n"
    ".globl arena_read_command_return\n"
    ".hidden arena_read_command_return\n"
    "arena_read_command_return:\n"
    "  ret\n"
    ".size arena_read_command, .-arena_read_command\n");
#else
#error "the command read knows x86_64 and aarch64"
#endif
extern "C" char arena_read_command_return[];

namespace {

// ---- frames: the slots' format (evaluator/wire.py writes and reads the same) ------------------------------------
constexpr char FRAME_MAGIC[8] = {'A', 'R', 'N', 'B', '0', '0', '0', '1'};
// An out frame whose head is in the slot and whose data is in the judge's device memory for this rank's outputs (GPU
// hosts), at the offsets the head names, as if the head were in front of it there too.
constexpr char DEVICE_FRAME_MAGIC[8] = {'A', 'R', 'N', 'D', '0', '0', '0', '1'};
// A feed frame laid out the same way in the rank's device feed, whose data the judge writes there only once the
// call's stream has reached the gate: the gate's token is the head's last eight bytes before the data (padding in any
// other frame: a head and its entries end 16 or 48 bytes short of a multiple of 64).
constexpr char GATED_FRAME_MAGIC[8] = {'A', 'R', 'N', 'G', '0', '0', '0', '1'};
// Where the call's stream writes the token as it reaches the gate: the device feed's first word (no frame's data starts
// before its head's length, 64 bytes or more). The gate's release is a word the rank cannot write (F.release_dev).
constexpr size_t GATE_ARMED = 0;
constexpr unsigned CU_STREAM_WAIT_VALUE_EQ = 1;
constexpr size_t FRAME_HEAD = 16;   // magic, u32 entries, u32 outputs
constexpr size_t ENTRY = 96;        // u8 kind, u8 dtype, u8 ndim, 5 pad, u64 offset, u64 nbytes, i64 shape[8]
constexpr size_t ALIGN = 64;
constexpr uint32_t MAX_ENTRIES = 256;        // values one call takes or returns
constexpr uint32_t MAX_FRAME_ENTRIES = 4096; // values of a frame: a batch's calls side by side
constexpr uint32_t MAX_BATCH = 1024;         // calls in one timed window (evaluator/host/batch.py sets fewer)
constexpr int MAX_DIMS = 8;
constexpr size_t GROW = 1 << 20;
constexpr int64_t MAX_PIECES = 1 << 16;  // copies of one non-contiguous GPU output
// The least data a frame must hold to go to the judge through the out feed (write_frame). On one H100, identical code
// of the bench all-reduce (16 MiB of outputs, 10.5 µs a call) read 1.017 on average over 15 warm evaluations with its
// timed frames there, against 1.000 over 15 with them in host memory, the cause not found: below this size the host
// path's copies cost little, and both sides take it; above it a call's device time is long enough that a shift of that
// order (about 0.2 µs) is under 1 %.
constexpr size_t DEVICE_FRAME_MIN = size_t{32} << 20;
// Bytes a device-to-device copy moves per ns at most on the GPUs the profiles name (it reads and writes each byte: an
// H200's 4.8 TB/s of memory bandwidth copies at most 2.4 bytes per ns): a gate's copy takes at least its bytes over
// this, which the gate's spin leaves out (gate).
constexpr uint64_t GATE_COPY_BYTES_PER_NS = 3;

// The dtypes a frame may hold (c10::ScalarType's numbers; evaluator/wire.py has the same table).
bool known_dtype(uint8_t d) { return d <= 11 || d == 15 || d == 23 || d == 24 || (d >= 27 && d <= 29); }

size_t padded(size_t n) { return n + ((ALIGN - n % ALIGN) % ALIGN); }

// ---- the CUDA driver, loaded at open() --------------------------------------------------------------------------
typedef int (*cu_event_create_t)(void **, unsigned int);
typedef int (*cu_event_record_t)(void *, void *);
typedef int (*cu_event_sync_t)(void *);
typedef int (*cu_event_elapsed_t)(float *, void *, void *);
typedef int (*cu_htod_t)(uint64_t, const void *, size_t, void *);
typedef int (*cu_dtoh_t)(void *, uint64_t, size_t, void *);
typedef int (*cu_dtod_t)(uint64_t, uint64_t, size_t, void *);
typedef int (*cu_memset_t)(uint64_t, unsigned char, size_t, void *);
typedef int (*cu_stream_sync_t)(void *);
typedef int (*cu_ctx_sync_t)(void);
typedef int (*cu_host_register_t)(void *, size_t, unsigned int);
typedef int (*cu_host_unregister_t)(void *);
typedef int (*cu_ctx_set_limit_t)(int, size_t);
typedef int (*cu_ctx_reset_l2_t)(void);
typedef int (*cu_stream_value64_t)(void *, uint64_t, uint64_t, unsigned int);
typedef int (*cu_launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **,
                           void **);
constexpr int CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06;
struct CUDA_MEMCPY2D_st {
  size_t srcXInBytes, srcY;
  int srcMemoryType;
  const void *srcHost;
  uint64_t srcDevice;
  void *srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void *dstHost;
  uint64_t dstDevice;
  void *dstArray;
  size_t dstPitch;
  size_t WidthInBytes, Height;
};
typedef int (*cu_memcpy2d_t)(const CUDA_MEMCPY2D_st *, void *);

struct Driver {
  cu_event_record_t record = nullptr;
  cu_event_sync_t event_sync = nullptr;
  cu_event_elapsed_t elapsed = nullptr;
  cu_htod_t htod = nullptr;
  cu_dtoh_t dtoh = nullptr;
  cu_dtod_t dtod = nullptr;
  cu_event_create_t event_create = nullptr;
  cu_memset_t memset8 = nullptr;
  cu_stream_sync_t stream_sync = nullptr;
  cu_ctx_sync_t ctx_sync = nullptr;
  cu_host_register_t host_register = nullptr;
  cu_host_unregister_t host_unregister = nullptr;
  cu_memcpy2d_t memcpy2d = nullptr;
  cu_ctx_set_limit_t set_limit = nullptr;
  cu_ctx_reset_l2_t reset_persisting_l2 = nullptr;
  cu_launch_t launch = nullptr;  // the frame digest's kernel (device_digest)
  // The gate's two words (pass_gate, gate): absent from a driver without stream memory operations, and then no side
  // gets a device feed.
  cu_stream_value64_t wait_value64 = nullptr;
  cu_stream_value64_t write_value64 = nullptr;
};

// ---- one process's engine -------------------------------------------------------------------------------------------
struct Mapping {
  int fd = -1;
  void *addr = nullptr;
  size_t size = 0;
  bool writable = false;
  bool registered = false;
};

// A descriptor of the evaluator's as it was before any solution code ran (same_channel).
constexpr int CHANNEL_REPLACED_EXIT = 87;
struct Channel {
  int fd = -1;
  dev_t dev = 0;
  ino_t ino = 0;
};

// What the engine sets once and never writes again lives in pages of their own, made read-only and sealed (mseal)
// once the rank is set up and before the solution loads (seal_engine): no mprotect, munmap or mremap can touch them
// after that, from any thread. Never destroyed: a member's destructor at exit would write a sealed page.
constexpr uintptr_t PAGE = 4096;
template <class T>
union alignas(PAGE) Sealable {
  T v;
  Sealable() : v() {}
  ~Sealable() {}
};

// The CUDA driver's functions the engine calls through, set once at open() and never again: a table of its own, under
// a name the host finds in the built file (evaluator/host/engine_sites.py), which compares it at every stop with what
// it held before the solution loaded. Repointed, an entry would time a call, copy its outputs or wait for the device
// as the solution says.
Sealable<Driver> driver_page __asm__("arena_driver") __attribute__((used));
Driver &D = driver_page.v;

// What the engine sets when it is opened (and the report channel it holds right after), before any solution code
// runs, and never writes again: a table of its own, under a name the host finds in the built file
// (evaluator/host/engine_sites.py), compared at every stop with what it held before the solution loaded, as the driver
// table is. Rewritten, an entry would hand the engine's steps to the solution: a backend of its own to align on, a
// spin function of its own to call, another descriptor to write samples to, a key it chose, signal handlers of its
// own taken for the rank's. What the checks compare against is kept inline (no pointer to writable memory): the
// watched variables' names and values, the result classes, the flush buffer's address.
constexpr int MAX_WATCHED = 16;
constexpr size_t WATCHED_NAME = 64, WATCHED_VALUE = 256;
constexpr int MAX_RESULT_TUPLES = 256;  // torch 2.13 has 87
constexpr size_t IMPL_BYTES = 512;      // at least sizeof(c10::TensorImpl)
struct Watched {
  char name[WATCHED_NAME];
  char value[WATCHED_VALUE];
  bool set;
};
struct Fixed {
  bool opened = false;
  int timer_fd = -1;
  uint64_t k0 = 0, k1 = 0;
  bool cuda = false;
  int device_index = -1;
  void *stream = nullptr;
  void *ev_start = nullptr, *ev_end = nullptr;
  c10::intrusive_ptr<c10d::Backend> backend;
  at::Tensor one, flush;
  uint64_t flush_ptr = 0;  // F.flush's device memory, as allocated
  size_t flush_bytes = 0;
  PyObject *sleep_fn = nullptr;  // torch's spin kernel, a C function
  // The spin called as the C function it is (read from the function object at open): the object itself is heap
  // memory, and a solution could re-point its method table.
  PyCFunction sleep_meth = nullptr;
  PyObject *sleep_self = nullptr;
  // The backend's table of virtual functions as it was at open: the backend object is heap memory, and a solution
  // that re-pointed its table would run code of its own as the engine's alignment (backend()).
  const void *backend_vtable = nullptr;
  double cycles_per_us = 0.0;
  PyTypeObject *result_tuples[MAX_RESULT_TUPLES] = {};  // torch.return_types' classes, taken at open
  int n_result_tuples = 0;
  Channel timer_channel, report_channel;
  Watched watched_env[MAX_WATCHED] = {};
  int n_watched = 0;
  struct sigaction dispositions[65];
  // What makes a value a plain tensor, as it was at open: torch's tensor class (libtorch_python keeps it in writable
  // memory) and the table of virtual functions of a dense tensor's implementation (every tensor's own heap memory
  // points to it; one pointed elsewhere would run the solution's code where the engine reads the tensor).
  PyTypeObject *tensor_type = nullptr;
  const void *impl_vtable = nullptr;
  // The bits of a tensor's implementation that send its device, layout, sizes or strides to a function of its own
  // (c10::TensorImpl's custom and Python policies, found at open by setting each on a fresh tensor): all must be as a
  // plain tensor has them.
  unsigned char policy_mask[IMPL_BYTES] = {}, policy_plain[IMPL_BYTES] = {};
  // torch.Tensor.__torch_dispatch__ as it was at open: a Python policy bit would send a call to it.
  PyObject *dispatch_name = nullptr, *tensor_dispatch = nullptr;
  // The calling thread's signal mask at open (each call starts with it) and what is blocked from a call's return on:
  // a handler the solution installed could otherwise run between the return and the signals' read-back, and put
  // another in place that runs later (a red team's timer did).
  sigset_t call_mask, after_call;
  // GPU hosts: a single call's stop when its strided outputs were copied inside its sample (ev_end is recorded as the
  // call returns, before anything else).
  void *ev_after = nullptr;
  // GPU hosts: a timed call's stream as it reached its gate (pass_gate): the time from there to the start event is
  // how long the judge held the gate.
  void *ev_armed = nullptr;
  // The allocators the engine makes its inputs, staging and copies with, and their tables of virtual functions, as
  // they were at open: c10's registry of allocators is writable memory, and a red team's allocator put there ran its
  // code in the engine before each call and learned where a window's later inputs were (allocator()).
  c10::Allocator *cpu_allocator = nullptr, *cuda_allocator = nullptr;
  const void *cpu_allocator_vtable = nullptr, *cuda_allocator_vtable = nullptr;
  // GPU hosts: where the judge writes this process's inputs in device memory (open_device_feed, make_device_feed),
  // set before the solution loads. Re-pointed, the engine would read its inputs from memory of the solution's and
  // zero that instead of the feed.
  uint64_t feed_dev = 0;
  size_t feed_dev_bytes = 0;
  // GPU hosts: where this process writes its outputs (and an untimed call's inputs-after) for the judge, in device
  // memory the judge made (open_device_feed, make_device_feed with ``outputs``); a frame's head stays in the out slot.
  uint64_t out_dev = 0;
  size_t out_dev_bytes = 0;
  // The frame digest's kernel (loaded from PTX at open) and the device word it sums into.
  void *digest_fn = nullptr;
  void *gate_spin_fn = nullptr;  // the gate's spin, in the same module
  // GPU hosts with a device feed: the gate's release, a word in a page of host memory the judge made (make_gate) and
  // alone can write (the solution's rank maps it read-only, from a sealed memory file), mapped for the device. The
  // call's stream waits on it for the call's token (pass_gate).
  uint64_t release_dev = 0;
  at::Tensor digest_buf;
  uint64_t digest_word = 0;
};
Sealable<Fixed> fixed_page __asm__("arena_fixed") __attribute__((used));
Fixed &F = fixed_page.v;

// What changes from step to step.
struct State {
  uint32_t seq = 0;
  std::vector<std::pair<void *, void *>> call_events;  // a window's per-call start and stop, made on first use
  // GPU hosts, inputs that came through the slot (no device feed, or a window of several calls): where they wait in
  // device memory between the feed's consume (before the barrier) and their copy into the call's own storage on the
  // call's stream (after the spin, the flush and the alignment). A block of the caching allocator's, which
  // torch.cuda.memory_snapshot() lists to the code under test (docs/threat-model.md).
  at::Tensor staging;
  // GPU hosts, inputs that came through the slot: unmasked here (private memory, page-locked once made) and copied to
  // the staging buffer from here; the slot, which a peer may be able to read, only ever holds them masked.
  Mapping unmasked;
  double spin_us = 0.0;
  std::map<int, Mapping> maps;
  // What the previous step left: released inside the next step's window.
  std::vector<PyObject *> held_args, held_results;
  std::vector<at::Tensor> held_inputs;
  uint32_t last_op = 0, last_i = 0, last_flags = 0;  // the command being served, for an error's report
};

State S;
std::atomic<bool> counting{false};
// Set by seal_engine(): from then on the fixed tables are read-only, and nothing may try to write them. Not in F: the
// host compares F with what it held before the solution loaded, and sealing comes after.
bool engine_sealed = false;

// From serve()'s start to its end every call into this module comes from the solution (serve runs nothing else): a
// solution that never returns from a call and answers the host's commands through the engine's own functions (the
// module loaded a second time shares this state) would write every report, and so every rule, itself. Such a call
// ends the rank with ENGINE_REENTERED_EXIT, which the host refuses; ending it leaves nothing to catch.
constexpr int ENGINE_REENTERED_EXIT = 88;
// Under a name the host finds in the built file: at every stop after a reply it must be set (watch.engine_serving).
bool serving __asm__("arena_serving") __attribute__((used)) = false;

void not_while_serving() {
  if (!serving) return;
  static const char msg[] = "the solution called the evaluator's engine from inside its call\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(ENGINE_REENTERED_EXIT);
}
std::map<std::string, int64_t> comm_counts;  // dispatcher ops of communication, counted while a call runs

// ---- helpers ------------------------------------------------------------------------------------------------------
double now_us() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

bool write_all(int fd, const void *buf, size_t n) {
  const char *p = static_cast<const char *>(buf);
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// The evaluator's channels out of a rank (its reports, its timer) are pipes the host opened. A solution that re-points
// one (dup2 of a pipe of its own over the descriptor, to read and edit what the engine writes before passing it on)
// would silence every rule the reports carry; so before every write the engine checks that the descriptor is still the
// file it was before any solution code ran, and ends the rank with CHANNEL_REPLACED_EXIT, writing nothing, when not.

Channel held_channel(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) throw std::runtime_error("a channel of the evaluator's is not open");
  return Channel{fd, st.st_dev, st.st_ino};
}

void same_channel(const Channel &c) {
  struct stat st;
  if (c.fd >= 0 && fstat(c.fd, &st) == 0 && st.st_dev == c.dev && st.st_ino == c.ino) return;
  static const char msg[] = "the evaluator's report or timer descriptor was re-pointed by the solution\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(CHANNEL_REPLACED_EXIT);
}

// same_channel cannot see a swap put back between two of its checks: a thread that needs no GIL can dup2 a pipe of its
// own over the report descriptor just after one check and the original back before the next. So once the channels
// are in place, before any solution code runs, the rank's own filter ends the process (SIGSYS, which the host reads
// as a refusal) at any dup2/dup3 onto one of them or any further system-call filter (one with a user-space listener
// could answer the engine's own writes for it), and refuses (EPERM) a close of one, a close_range over it, setting
// close-on-exec on it (fcntl F_SETFD, ioctl FIOCLEX: an exec would close it for the new image to reuse its number)
// and resizing it (F_SETPIPE_SZ: a pipe of one page splits the engine's lines for a thread to write between them): a
// child the solution forks closes what it inherits, which is harmless and must not end it. The command channel is
// read by arena_read_command's instruction alone: a read of it from anywhere else, any other system call that reads
// it, and a copy of it (dup, dup2/dup3 from it, fcntl F_DUPFD) end the process; changing its flags (non-blocking,
// asynchronous) is refused. The filter holds for every thread (TSYNC) and every child.
[[noreturn]] void fail(const std::string &what);
size_t watch_bound_tables();
void check_bound_tables();

struct Bpf {
  std::vector<sock_filter> f;
  std::vector<long> labels;
  std::vector<std::tuple<size_t, int, int>> jumps;  // instruction, label if true, label if false (-1: the next)
  int label() {
    labels.push_back(-1);
    return static_cast<int>(labels.size()) - 1;
  }
  void bind(int l) { labels[l] = static_cast<long>(f.size()); }
  void load(uint32_t offset) { f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); }
  void ret(uint32_t k) { f.push_back(BPF_STMT(BPF_RET | BPF_K, k)); }
  void jump(uint16_t op, uint32_t k, int if_true, int if_false = -1) {
    jumps.emplace_back(f.size(), if_true, if_false);
    f.push_back(BPF_JUMP(BPF_JMP | op | BPF_K, k, 0, 0));
  }
  std::vector<sock_filter> &resolved() {
    for (auto &[i, t, e] : jumps) {
      for (auto [l, field] : {std::pair<int, uint8_t *>{t, &f[i].jt}, {e, &f[i].jf}}) {
        if (l < 0) continue;
        long off = labels[l] - static_cast<long>(i) - 1;
        if (labels[l] < 0 || off < 0 || off > 255) fail("the channel lock's filter does not assemble");
        *field = static_cast<uint8_t>(off);
      }
    }
    return f;
  }
};

void lock_channels(std::vector<int> fds, int command_fd) {
  not_while_serving();
  if (command_fd >= 0 && std::find(fds.begin(), fds.end(), command_fd) == fds.end()) fds.push_back(command_fd);
  for (int fd : {F.report_channel.fd, F.timer_channel.fd})
    if (fd >= 0) fds.push_back(fd);
  if (fds.empty() || fds.size() > 16) fail("the engine locks between 1 and 16 channels");
  for (int fd : fds) {
    struct stat st;
    if (fd < 3 || fstat(fd, &st) != 0) fail("a channel to lock is not open");
    // Open across an exec: the filter refuses setting close-on-exec again, so an exec cannot close a channel for the
    // new image to put something else at its number.
    if (fcntl(fd, F_SETFD, 0) != 0) fail("a channel to lock could not be kept open across exec");
  }
#if defined(__x86_64__)
  const uint32_t arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  const uint32_t arch = AUDIT_ARCH_AARCH64;
#else
#error "the channel lock knows x86_64 and aarch64"
#endif
  // struct seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8i. Descriptors are unsigned ints: the kernel reads an
  // argument's low word alone (first on these little-endian machines), and so does the filter.
  auto arg = [](int i) { return static_cast<uint32_t>(16 + 8 * i); };
  Bpf b;
  int eperm = b.label(), kill = b.label(), second = b.label(), first = b.label(), range = b.label(), pr = b.label();
  int setfd = b.label(), cloexec = b.label(), rd = b.label(), cmd0 = b.label(), cmd1 = b.label(), dupfd = b.label();
  int cmd_flags = b.label();
  b.load(4);
  b.jump(BPF_JEQ, arch, -1, eperm);
  b.load(0);
#ifdef __NR_dup2
  b.jump(BPF_JEQ, __NR_dup2, second);
#endif
  b.jump(BPF_JEQ, __NR_dup3, second);
  b.jump(BPF_JEQ, __NR_close, first);
  b.jump(BPF_JEQ, __NR_close_range, range);
  b.jump(BPF_JEQ, __NR_fcntl, setfd);
  b.jump(BPF_JEQ, __NR_ioctl, cloexec);
  b.jump(BPF_JEQ, __NR_seccomp, kill);
  b.jump(BPF_JEQ, __NR_prctl, pr);
  if (command_fd >= 0) {
    // The command channel is read by arena_read_command alone; any other way of reading it, or of making a second
    // descriptor of it to read, ends the process.
    b.jump(BPF_JEQ, __NR_read, rd);
    for (long nr : {static_cast<long>(__NR_readv), static_cast<long>(__NR_pread64), static_cast<long>(__NR_preadv),
                    static_cast<long>(__NR_preadv2), static_cast<long>(__NR_recvfrom), static_cast<long>(__NR_recvmsg),
                    static_cast<long>(__NR_recvmmsg), static_cast<long>(__NR_splice), static_cast<long>(__NR_tee),
                    static_cast<long>(__NR_copy_file_range), static_cast<long>(__NR_dup)})
      b.jump(BPF_JEQ, static_cast<uint32_t>(nr), cmd0);
    b.jump(BPF_JEQ, __NR_sendfile, cmd1);
  }
  b.ret(SECCOMP_RET_ALLOW);
  if (command_fd >= 0) {
    // struct seccomp_data: the instruction pointer at 8, low word first. On these machines it is the address after
    // the system-call instruction: arena_read_command_return.
    uint64_t site = reinterpret_cast<uint64_t>(arena_read_command_return);
    b.bind(rd);
    b.load(arg(0));
    int on_command = b.label();
    b.jump(BPF_JEQ, static_cast<uint32_t>(command_fd), on_command);
    b.ret(SECCOMP_RET_ALLOW);
    b.bind(on_command);
    b.load(8);
    b.jump(BPF_JEQ, static_cast<uint32_t>(site), -1, kill);
    b.load(12);
    b.jump(BPF_JEQ, static_cast<uint32_t>(site >> 32), -1, kill);
    b.ret(SECCOMP_RET_ALLOW);
    for (auto [l, a] : {std::pair<int, int>{cmd0, 0}, {cmd1, 1}}) {
      b.bind(l);
      b.load(arg(a));
      b.jump(BPF_JEQ, static_cast<uint32_t>(command_fd), kill);
      b.ret(SECCOMP_RET_ALLOW);
    }
  }
  for (auto [l, a, to] : {std::tuple<int, int, int>{second, 1, kill}, {first, 0, eperm}}) {
    b.bind(l);
    b.load(arg(a));
    for (int fd : fds) b.jump(BPF_JEQ, static_cast<uint32_t>(fd), to);
    if (l == second && command_fd >= 0) {  // dup2/dup3 of the command channel onto another number: a copy to read
      b.load(arg(0));
      b.jump(BPF_JEQ, static_cast<uint32_t>(command_fd), kill);
    }
    b.ret(SECCOMP_RET_ALLOW);
  }
  b.bind(range);  // close_range(first, last, flags): refused when first <= fd <= last
  for (int fd : fds) {
    int next = b.label();
    b.load(arg(0));
    b.jump(BPF_JGT, static_cast<uint32_t>(fd), next);
    b.load(arg(1));
    b.jump(BPF_JGE, static_cast<uint32_t>(fd), eperm);
    b.bind(next);
  }
  b.ret(SECCOMP_RET_ALLOW);
  // fcntl(fd, F_SETFD) and ioctl(fd, FIOCLEX) on a channel: refused, so an exec cannot close it. fcntl(fd,
  // F_SETPIPE_SZ) too: a pipe shrunk to a page splits the engine's report lines, for a thread to write into the gaps.
  b.bind(setfd);
  b.load(arg(1));
  int on_channel = b.label();
  b.jump(BPF_JEQ, F_SETFD, on_channel);
  b.jump(BPF_JEQ, F_SETPIPE_SZ, on_channel);
  if (command_fd >= 0) {
    b.jump(BPF_JEQ, F_DUPFD, dupfd);
    b.jump(BPF_JEQ, F_DUPFD_CLOEXEC, dupfd);
    // The command channel's flags stay the engine's: non-blocking, it would take an empty pipe for the host's
    // hang-up; asynchronous, its signals would go where the solution says.
    for (int op : {F_SETFL, F_SETOWN, F_SETSIG, F_SETOWN_EX}) b.jump(BPF_JEQ, static_cast<uint32_t>(op), cmd_flags);
  }
  b.ret(SECCOMP_RET_ALLOW);
  b.bind(cloexec);
  b.load(arg(1));
  b.jump(BPF_JEQ, FIOCLEX, on_channel);
  if (command_fd >= 0) {
    b.jump(BPF_JEQ, FIONBIO, cmd_flags);
    b.jump(BPF_JEQ, FIOASYNC, cmd_flags);
  }
  b.ret(SECCOMP_RET_ALLOW);
  b.bind(on_channel);
  b.load(arg(0));
  for (int fd : fds) b.jump(BPF_JEQ, static_cast<uint32_t>(fd), eperm);
  b.ret(SECCOMP_RET_ALLOW);
  if (command_fd >= 0) {
    b.bind(dupfd);
    b.load(arg(0));
    b.jump(BPF_JEQ, static_cast<uint32_t>(command_fd), kill);
    b.ret(SECCOMP_RET_ALLOW);
    b.bind(cmd_flags);
    b.load(arg(0));
    b.jump(BPF_JEQ, static_cast<uint32_t>(command_fd), eperm);
    b.ret(SECCOMP_RET_ALLOW);
  }
  b.bind(pr);
  b.load(arg(0));
  b.jump(BPF_JEQ, PR_SET_SECCOMP, kill);
  b.ret(SECCOMP_RET_ALLOW);
  b.bind(eperm);
  b.ret(SECCOMP_RET_ERRNO | EPERM);
  b.bind(kill);
  b.ret(SECCOMP_RET_KILL_PROCESS);
  std::vector<sock_filter> &code = b.resolved();
  sock_fprog prog{static_cast<unsigned short>(code.size()), code.data()};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("the channel lock needs no_new_privs");
  long done = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
  if (done != 0)
    fail(done > 0 ? "the channel lock could not reach every thread" : std::string("the channel lock failed: ") +
                                                                          strerror(errno));
}

// CRC-32C of a timed call's output frame, taken once it is in the slot and reported with the reply; the judge takes it
// again over what the host copied out after the stop. Anything that lands in the slot after the reply (a thread's
// write, or a copy the kernel was still doing when the rank replied, which a stop waits for) changes it.
uint32_t crc32c_soft(const unsigned char *p, size_t n, uint32_t c) {
  while (n--) {
    c ^= *p++;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return c;
}

// A product modulo the polynomial, both operands in the CRC's bit-reflected form (x^0 is the top bit): what moves a CRC
// state over a run of zero bytes, so that lanes taken apart can be joined.
uint32_t times_mod_p(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1u) ? (b >> 1) ^ 0x82F63B78u : b >> 1;
  }
  return product;
}

// x^(8 * bytes) modulo the polynomial: times a state, the state carried over that many zero bytes.
uint32_t zeros_operator(size_t bytes) {
  uint32_t result = 1u << 31, base = 1u << 30;  // x^0, x^1
  for (uint64_t e = 8ull * bytes; e; e >>= 1) {
    if (e & 1) result = times_mod_p(result, base);
    base = times_mod_p(base, base);
  }
  return result;
}

#if defined(__x86_64__)
// The CRC instruction takes three cycles and can start one every cycle: three lanes of LANE bytes run side by side, and
// are joined (the first carried over 2 LANE zero bytes, the second over LANE) into the one CRC of their whole run.
constexpr size_t LANE = 8192;

__attribute__((target("sse4.2"))) uint32_t crc32c_sse(const unsigned char *p, size_t n, uint32_t c) {
  uint64_t x = c;
  while (n && (reinterpret_cast<uintptr_t>(p) & 7)) {
    x = _mm_crc32_u8(static_cast<uint32_t>(x), *p++);
    --n;
  }
  if (n >= 3 * LANE) {
    static const uint32_t over_lane = zeros_operator(LANE);
    for (; n >= 3 * LANE; n -= 3 * LANE, p += 3 * LANE) {
      uint64_t a = x, b = 0, d = 0;
      for (size_t k = 0; k < LANE; k += 8) {
        uint64_t wa, wb, wd;
        memcpy(&wa, p + k, 8);
        memcpy(&wb, p + LANE + k, 8);
        memcpy(&wd, p + 2 * LANE + k, 8);
        a = _mm_crc32_u64(a, wa);
        b = _mm_crc32_u64(b, wb);
        d = _mm_crc32_u64(d, wd);
      }
      uint32_t ab = times_mod_p(over_lane, static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b);
      x = times_mod_p(over_lane, ab) ^ static_cast<uint32_t>(d);
    }
  }
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    memcpy(&word, p, 8);
    x = _mm_crc32_u64(x, word);
  }
  while (n--) x = _mm_crc32_u8(static_cast<uint32_t>(x), *p++);
  return static_cast<uint32_t>(x);
}
#endif

uint32_t crc32c(const void *data, size_t n) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
#if defined(__x86_64__)
  if (__builtin_cpu_supports("sse4.2")) return crc32c_sse(p, n, 0xFFFFFFFFu) ^ 0xFFFFFFFFu;
#endif
  return crc32c_soft(p, n, 0xFFFFFFFFu) ^ 0xFFFFFFFFu;
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                              \
  do {                                                        \
    v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
    v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                    \
    v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                    \
    v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
  } while (0)

uint64_t siphash(const unsigned char *m, size_t len) {
  uint64_t v0 = 0x736f6d6570736575ULL ^ F.k0, v1 = 0x646f72616e646f6dULL ^ F.k1;
  uint64_t v2 = 0x6c7967656e657261ULL ^ F.k0, v3 = 0x7465646279746573ULL ^ F.k1;
  for (size_t i = 0; i < len; i += 8) {
    uint64_t w;
    memcpy(&w, m + i, 8);
    v3 ^= w; SIPROUND; SIPROUND; v0 ^= w;
  }
  uint64_t b = ((uint64_t)len) << 56;
  v3 ^= b; SIPROUND; SIPROUND; v0 ^= b;
  v2 ^= 0xff; SIPROUND; SIPROUND; SIPROUND; SIPROUND;
  return v0 ^ v1 ^ v2 ^ v3;
}

// ---- the feed's mask ---------------------------------------------------------------------------------------------
// A feed slot is a file: a peer that got its descriptor (passed over a socket and kept there as a message in flight,
// where no table of descriptors shows it to a stop) can read it in the moment between the host's command and this
// rank's copy of it. So the judge writes each frame's data masked, under a key drawn for that call and that rank and
// sent with the host's command to this rank's engine alone, which unmasks the data as it copies it into the call's
// own storage. The keystream is a pseudorandom function of the byte's offset in the slot, so what a peer knows of
// some of a frame (zeros, say) tells it nothing of the rest, nor of the next call's: AES-128 in counter mode where
// the CPU has AES instructions (byte p: byte p % 16 of the block that encrypts p / 16), about a plain copy's speed;
// else SipHash's rounds over the word index (byte p: byte p % 8, little-endian, of the word for p / 8; one compression
// round, three finalization rounds), a few times slower. The judge and the ranks of an evaluation run on one host, so
// both sides take the same one.
struct MaskKey {
  uint64_t k0 = 0, k1 = 0;
};

inline uint64_t mask_word(const MaskKey &k, uint64_t w) {
  uint64_t v0 = 0x736f6d6570736575ULL ^ k.k0, v1 = 0x646f72616e646f6dULL ^ k.k1;
  uint64_t v2 = 0x6c7967656e657261ULL ^ k.k0, v3 = 0x7465646279746573ULL ^ k.k1;
  v3 ^= w; SIPROUND; v0 ^= w;
  v2 ^= 0xff; SIPROUND; SIPROUND; SIPROUND;
  return v0 ^ v1 ^ v2 ^ v3;
}

void sip_mask(unsigned char *dst, const unsigned char *src, size_t at, size_t n, const MaskKey &k) {
  size_t i = 0;
  auto one = [&](size_t j) {
    dst[j] = src[j] ^ static_cast<unsigned char>(mask_word(k, (at + j) / 8) >> (8 * ((at + j) % 8)));
  };
  for (; i < n && (at + i) % 8; ++i) one(i);
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, src + i, 8);
    w ^= mask_word(k, (at + i) / 8);
    memcpy(dst + i, &w, 8);
  }
  for (; i < n; ++i) one(i);
}

#if defined(__x86_64__)
struct AesKey {
  __m128i rk[11];
};

__attribute__((target("aes,sse2"))) inline __m128i aes_expand_step(__m128i key, __m128i assist) {
  assist = _mm_shuffle_epi32(assist, 0xff);
  key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
  key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
  key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
  return _mm_xor_si128(key, assist);
}

// AES-128's round keys (FIPS-197's expansion; the round constants must be immediates, hence one line each).
__attribute__((target("aes,sse2"))) void aes_expand(const MaskKey &k, AesKey &a) {
  a.rk[0] = _mm_set_epi64x(static_cast<long long>(k.k1), static_cast<long long>(k.k0));
  a.rk[1] = aes_expand_step(a.rk[0], _mm_aeskeygenassist_si128(a.rk[0], 0x01));
  a.rk[2] = aes_expand_step(a.rk[1], _mm_aeskeygenassist_si128(a.rk[1], 0x02));
  a.rk[3] = aes_expand_step(a.rk[2], _mm_aeskeygenassist_si128(a.rk[2], 0x04));
  a.rk[4] = aes_expand_step(a.rk[3], _mm_aeskeygenassist_si128(a.rk[3], 0x08));
  a.rk[5] = aes_expand_step(a.rk[4], _mm_aeskeygenassist_si128(a.rk[4], 0x10));
  a.rk[6] = aes_expand_step(a.rk[5], _mm_aeskeygenassist_si128(a.rk[5], 0x20));
  a.rk[7] = aes_expand_step(a.rk[6], _mm_aeskeygenassist_si128(a.rk[6], 0x40));
  a.rk[8] = aes_expand_step(a.rk[7], _mm_aeskeygenassist_si128(a.rk[7], 0x80));
  a.rk[9] = aes_expand_step(a.rk[8], _mm_aeskeygenassist_si128(a.rk[8], 0x1b));
  a.rk[10] = aes_expand_step(a.rk[9], _mm_aeskeygenassist_si128(a.rk[9], 0x36));
}

__attribute__((target("aes,sse2"))) inline __m128i aes_block(const AesKey &a, uint64_t counter) {
  __m128i x = _mm_xor_si128(_mm_set_epi64x(0, static_cast<long long>(counter)), a.rk[0]);
  for (int r = 1; r < 10; ++r) x = _mm_aesenc_si128(x, a.rk[r]);
  return _mm_aesenclast_si128(x, a.rk[10]);
}

__attribute__((target("aes,sse2"))) void aes_mask(unsigned char *dst, const unsigned char *src, size_t at, size_t n,
                                                  const MaskKey &k) {
  AesKey a;
  aes_expand(k, a);
  size_t i = 0;
  auto bytes = [&](size_t upto) {  // one block's keystream over [i, upto), within one block
    alignas(16) unsigned char ks[16];
    _mm_store_si128(reinterpret_cast<__m128i *>(ks), aes_block(a, (at + i) / 16));
    for (; i < upto; ++i) dst[i] = src[i] ^ ks[(at + i) % 16];
  };
  if (n && at % 16) bytes(std::min(n, 16 - at % 16));
  for (; i + 128 <= n; i += 128) {  // eight blocks in flight: the AES unit's latency hidden
    const uint64_t c = (at + i) / 16;
    __m128i x[8];
    for (int j = 0; j < 8; ++j) x[j] = _mm_xor_si128(_mm_set_epi64x(0, static_cast<long long>(c + j)), a.rk[0]);
    for (int r = 1; r < 10; ++r)
      for (int j = 0; j < 8; ++j) x[j] = _mm_aesenc_si128(x[j], a.rk[r]);
    for (int j = 0; j < 8; ++j) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 16 * j));
      v = _mm_xor_si128(v, _mm_aesenclast_si128(x[j], a.rk[10]));
      _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + i + 16 * j), v);
    }
  }
  for (; i + 16 <= n; i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + i), _mm_xor_si128(v, aes_block(a, (at + i) / 16)));
  }
  if (i < n) bytes(n);
}

const bool MASK_WITH_AES = __builtin_cpu_supports("aes") && __builtin_cpu_supports("sse2");
#else
const bool MASK_WITH_AES = false;
#endif

// dst[i] = src[i] ^ the mask's byte at slot offset ``at + i``, for i < n (dst may be src).
void apply_mask(unsigned char *dst, const unsigned char *src, size_t at, size_t n, const MaskKey &k) {
#if defined(__x86_64__)
  if (MASK_WITH_AES) return aes_mask(dst, src, at, n, k);
#endif
  sip_mask(dst, src, at, n, k);
}

std::string json_str(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') { out += '\\'; out += static_cast<char>(c); }
    else if (c < 0x20) { out += "\\u00"; out += "0123456789abcdef"[c >> 4]; out += "0123456789abcdef"[c & 15]; }
    else out += static_cast<char>(c);
  }
  return out + "\"";
}

std::string json_list(const std::vector<std::string> &items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + json_str(items[i]);
  return out + "]";
}

// Three decimals, written by the engine itself: libc's printf family reads tables a solution can fill
// (register_printf_specifier ran a red team's handler, and its Python, while a report was written).
std::string json_num(double v) {
  if (v != v) return "nan";
  std::string out = v < 0 ? "-" : "";
  double a = v < 0 ? -v : v;
  if (a >= 9.0e15) return out + "inf";
  uint64_t milli = static_cast<uint64_t>(a * 1000.0 + 0.5);
  out += std::to_string(milli / 1000);
  char frac[5] = {'.', static_cast<char>('0' + milli % 1000 / 100), static_cast<char>('0' + milli % 100 / 10),
                  static_cast<char>('0' + milli % 10), 0};
  return out + frac;
}

[[noreturn]] void fail(const std::string &what) { throw std::runtime_error(what); }

void check_cu(int rc, const char *what) {
  if (rc) fail(std::string("the evaluator's ") + what + " failed (CUDA error " + std::to_string(rc) + ")");
}

// ---- the digest of a frame whose data is in device memory ---------------------------------------------------------
// A timed call's outputs on GPU hosts go to the judge in device memory (write_frame), where the rank's engine keeps a
// mapping after it replies, and where a kernel still running in another context could write. So the engine takes a
// digest of the frame as it replies and the judge takes it again over its own copy: one kernel of ours, in PTX the
// driver compiles at open (no compiler on the host, and nothing of torch's dispatcher, which the solution can extend,
// on the reply's path). Each 64-bit word is mixed with its position through multiplications and shifts and the mixes
// are summed modulo 2^64, so the sum is the same whatever order the threads add in. The mix is invertible: like the
// CRC, the digest binds the frame against writes that do not know it, and one word of free choice balances a change,
// so the judge compares the values and refuses padding that is not zero (evaluator/judge/rank.py _solution_frame).
const char DIGEST_PTX_WORDS[] = R"(.version 6.0
.target sm_60
.address_size 64
.visible .entry arena_digest(.param .u64 p_data, .param .u64 p_words, .param .u64 p_out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [p_data];
  ld.param.u64 %rd2, [p_words];
  ld.param.u64 %rd3, [p_out];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd3, %rd3;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %rd4, %r1, %r2;
  cvt.u64.u32 %rd5, %r3;
  add.u64 %rd4, %rd4, %rd5;
  mul.wide.u32 %rd6, %r4, %r2;
  mov.u64 %rd7, 0;
WORDS:
  setp.ge.u64 %p1, %rd4, %rd2;
  @%p1 bra SUMMED;
  shl.b64 %rd8, %rd4, 3;
  add.u64 %rd8, %rd1, %rd8;
  ld.global.u64 %rd9, [%rd8];
  mul.lo.u64 %rd10, %rd4, 0x9E3779B97F4A7C15;
  xor.b64 %rd9, %rd9, %rd10;
  mul.lo.u64 %rd9, %rd9, 0xBF58476D1CE4E5B9;
  shr.u64 %rd10, %rd9, 29;
  xor.b64 %rd9, %rd9, %rd10;
  mul.lo.u64 %rd9, %rd9, 0x94D049BB133111EB;
  shr.u64 %rd10, %rd9, 32;
  xor.b64 %rd9, %rd9, %rd10;
  add.u64 %rd7, %rd7, %rd9;
  add.u64 %rd4, %rd4, %rd6;
  bra.uni WORDS;
SUMMED:
)";
// One step of the warp's sum (PTX has no loops over registers' lanes of its own): the 64-bit partial sum of the lane
// OFFSET above, moved as two 32-bit halves, added in; five steps (16, 8, 4, 2, 1) leave the warp's sum in lane 0.
const char DIGEST_PTX_SHUFFLE[] = R"(  mov.b64 {%r5, %r6}, %rd7;
  shfl.sync.down.b32 %r7, %r5, OFFSET, 31, -1;
  shfl.sync.down.b32 %r8, %r6, OFFSET, 31, -1;
  mov.b64 %rd11, {%r7, %r8};
  add.u64 %rd7, %rd7, %rd11;
)";
const char DIGEST_PTX_END[] = R"(  and.b32 %r9, %r3, 31;
  setp.ne.u32 %p1, %r9, 0;
  @%p1 bra DONE;
  red.global.add.u64 [%rd3], %rd7;
DONE:
  ret;
}
)";

// The gate's spin (gate, pass_gate): one thread that waits until the device's global timer has advanced ``p_ns``
// nanoseconds. Launched on any stream by handle (torch's spin kernel runs on torch's current stream, and counts clock
// cycles measured once).
const char GATE_SPIN_PTX[] = R"(
.visible .entry arena_gate_spin(.param .u64 p_ns)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [p_ns];
  mov.u64 %rd2, %globaltimer;
SPIN:
  mov.u64 %rd3, %globaltimer;
  sub.u64 %rd4, %rd3, %rd2;
  setp.lt.u64 %p1, %rd4, %rd1;
  @%p1 bra SPIN;
  ret;
}
)";

std::string digest_ptx() {
  std::string ptx = DIGEST_PTX_WORDS;
  for (const char *offset : {"16", "8", "4", "2", "1"}) {
    std::string step = DIGEST_PTX_SHUFFLE;
    for (size_t at; (at = step.find("OFFSET")) != std::string::npos;) step.replace(at, 6, offset);
    ptx += step;
  }
  return ptx + DIGEST_PTX_END + GATE_SPIN_PTX;
}

typedef int (*cu_module_load_t)(void **, const void *);
typedef int (*cu_module_function_t)(void **, void *, const char *);

// Loads the digest's kernel into this process's context (open, GPU hosts): false where the driver cannot, and then no
// frame goes to device memory.
bool load_digest_kernel(void *lib) {
  auto load = reinterpret_cast<cu_module_load_t>(dlsym(lib, "cuModuleLoadData"));
  auto function = reinterpret_cast<cu_module_function_t>(dlsym(lib, "cuModuleGetFunction"));
  void *module = nullptr;
  std::string ptx = digest_ptx();
  if (!load || !function || !D.launch || load(&module, ptx.c_str()) != 0) return false;
  return function(&F.digest_fn, module, "arena_digest") == 0 &&
         function(&F.gate_spin_fn, module, "arena_gate_spin") == 0;
}

// The sum of the mixed 64-bit words of ``n`` bytes (a multiple of 8) of device memory at ``ptr``, waited for.
uint64_t device_words_digest(uint64_t ptr, size_t n) {
  if (!F.digest_fn || !F.digest_word) fail("this engine has no device digest");
  if (n % 8) fail("a device frame's data is not a whole number of words");
  uint64_t words = n / 8, out = F.digest_word, sum = 0;
  unsigned blocks = static_cast<unsigned>(std::min<uint64_t>(1024, std::max<uint64_t>(1, (words + 255) / 256)));
  void *args[] = {&ptr, &words, &out};
  check_cu(D.memset8(F.digest_word, 0, 8, F.stream), "digest reset");
  if (words) check_cu(D.launch(F.digest_fn, blocks, 1, 1, 256, 1, 1, 0, F.stream, args, nullptr), "digest kernel");
  check_cu(D.dtoh(&sum, F.digest_word, 8, F.stream), "digest read");
  check_cu(D.stream_sync(F.stream), "digest");
  return sum;
}

// A device frame's digest: its head (in the out slot) and its data (in device memory), as one non-negative number.
int64_t device_frame_digest(const void *head, size_t head_bytes, uint64_t data, size_t data_bytes) {
  uint64_t h = device_words_digest(data, data_bytes) ^ (uint64_t{crc32c(head, head_bytes)} * 0x9E3779B97F4A7C15ull);
  return static_cast<int64_t>(h & 0x7FFFFFFFFFFFFFFFull);
}

// ---- slots ----------------------------------------------------------------------------------------------------------
void unmap(Mapping &m) {
  if (m.registered && D.host_unregister) D.host_unregister(m.addr);
  if (m.addr) munmap(m.addr, m.size);
  m.addr = nullptr;
  m.size = 0;
  m.registered = false;
}

void remap(Mapping &m, size_t size) {
  unmap(m);
  if (!size) return;
  void *a = mmap(nullptr, size, PROT_READ | (m.writable ? PROT_WRITE : 0), MAP_SHARED, m.fd, 0);
  if (a == MAP_FAILED) fail("a slot could not be mapped");
  m.addr = a;
  m.size = size;
  if (F.cuda && D.host_register) {
    // Page-locked so copies run at the copy engines' speed; CUDA refuses a file on disk, which then stays pageable.
    m.registered = D.host_register(a, size, m.writable ? 1u : 9u) == 0;  // PORTABLE (| READ_ONLY)
  }
}

Mapping &mapping(int fd, bool writable) {
  Mapping &m = S.maps[fd];
  m.fd = fd;
  m.writable = writable;
  return m;
}

struct Entry {
  uint8_t kind = 0;
  uint8_t dtype = 0;
  std::vector<int64_t> shape;
  uint64_t offset = 0, nbytes = 0;
};

// Where a feed frame's data is: after its head in the slot, or (GPU hosts) in the device feed at the same offsets.
struct FeedData {
  bool device = false;  // a gated frame, its data in the device feed
  size_t start = 0;  // the data's first byte, past the head and its entries
  uint64_t token = 0;  // a gated frame's
};

// The feed's entries, every field checked against the size of the memory that holds the data (the file, or the
// device feed).
std::vector<Entry> read_frame_entries(const unsigned char *base, size_t size, FeedData &where) {
  if (size < FRAME_HEAD) fail("the feed slot holds no inputs");
  where.device = memcmp(base, GATED_FRAME_MAGIC, 8) == 0;
  if (!where.device && memcmp(base, FRAME_MAGIC, 8) != 0) fail("the feed slot holds no inputs");
  if (where.device && !F.feed_dev) fail("the feed slot names device memory, and this rank has no device feed");
  uint32_t count;
  memcpy(&count, base + 8, 4);
  if (count > MAX_FRAME_ENTRIES || FRAME_HEAD + count * ENTRY > size) fail("the feed slot's header is malformed");
  size_t data = padded(FRAME_HEAD + count * ENTRY);
  where.start = data;
  if (where.device) {
    if (data > size) fail("the feed slot's header is malformed");
    memcpy(&where.token, base + data - 8, 8);
    if (!where.token) fail("the feed slot names device memory without a gate's token");
  }
  const size_t room = where.device ? F.feed_dev_bytes : size;
  std::vector<Entry> out(count);
  for (uint32_t k = 0; k < count; ++k) {
    const unsigned char *e = base + FRAME_HEAD + k * ENTRY;
    Entry &x = out[k];
    x.kind = e[0];
    x.dtype = e[1];
    int ndim = e[2];
    memcpy(&x.offset, e + 8, 8);
    memcpy(&x.nbytes, e + 16, 8);
    if (x.kind == 0) continue;
    if (x.kind != 1 || ndim > MAX_DIMS || !known_dtype(x.dtype))
      fail("the feed slot has a malformed entry");
    int64_t numel = 1;
    for (int d = 0; d < ndim; ++d) {
      int64_t n;
      memcpy(&n, e + 24 + 8 * d, 8);
      if (n < 0) fail("the feed slot has a negative size");
      x.shape.push_back(n);
      numel *= n;
    }
    auto st_ = static_cast<c10::ScalarType>(x.dtype);
    if (static_cast<uint64_t>(numel) * c10::elementSize(st_) != x.nbytes || x.offset % ALIGN ||
        x.offset > room || x.nbytes > room || data + x.offset + x.nbytes > room)
      fail("the feed slot has an entry whose size does not match its shape");
    x.offset += data;
  }
  return out;
}

std::vector<Entry> read_feed(Mapping &m, FeedData &where) {
  struct stat st;
  if (fstat(m.fd, &st) != 0) fail("the feed slot could not be read");
  size_t size = static_cast<size_t>(st.st_size);
  if (size != m.size) remap(m, size);
  return read_frame_entries(static_cast<const unsigned char *>(m.addr), size, where);
}

// The judge: a frame it wrote (the bytes of ``frame``, the slot's from its start) masked in place under key ``k``,
// every input's data and nothing else, as make_inputs() unmasks it. A gated frame holds no data here: left alone.
void mask_frame(py::buffer frame, std::pair<uint64_t, uint64_t> k) {
  not_while_serving();
  py::buffer_info info = frame.request(true);
  if (info.itemsize != 1 || info.ndim != 1) fail("a frame to mask is a flat buffer of bytes");
  unsigned char *base = static_cast<unsigned char *>(info.ptr);
  FeedData where;
  std::vector<Entry> entries = read_frame_entries(base, static_cast<size_t>(info.size), where);
  if (where.device) return;
  const MaskKey key{k.first, k.second};
  for (const Entry &e : entries)
    if (e.kind != 0) apply_mask(base + e.offset, base + e.offset, e.offset, e.nbytes, key);
}

// ---- communication counted from the dispatcher ---------------------------------------------------------------------
bool is_communication(const char *name) {
  return !strncmp(name, "c10d::", 6) || !strncmp(name, "_c10d_functional::", 18) ||
         !strncmp(name, "c10d_functional::", 17) || !strncmp(name, "symm_mem::", 10);
}

std::unique_ptr<at::ObserverContext> on_op(const at::RecordFunction &fn) {
  if (counting.load(std::memory_order_relaxed)) {
    const char *name = fn.name();
    if (name && is_communication(name)) comm_counts[name] += 1;
  }
  return nullptr;
}

// ---- the spin, the flush and the alignment before a timed call ------------------------------------------------------
// ``spin``: false where the judge's stream spins in front of the gate instead (pass_gate).
void prepare_timed(bool spin) {
  if (!F.cuda) return;
  // The L2 cache's set-aside for persisting accesses is the device's, and a line marked persisting outlives the
  // flush's ordinary writes: a call could leave the next side (the baseline, in another process) a fraction of the
  // cache. Every timed call, on both sides, starts with no set-aside and no persisting line (the device is idle here:
  // the previous call ended with a context synchronize).
  // A device without the set-aside (CUDA_ERROR_UNSUPPORTED_LIMIT, CUDA_ERROR_NOT_SUPPORTED) has nothing to reset.
  for (int rc : {D.set_limit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0), D.reset_persisting_l2()})
    if (rc != 215 && rc != 801) check_cu(rc, "the L2's set-aside for persisting accesses");
  if (spin && F.sleep_meth && F.cycles_per_us > 0 && S.spin_us > 0) {
    PyObject *cycles = PyLong_FromLongLong(static_cast<long long>(S.spin_us * F.cycles_per_us));
    if (!cycles) throw py::error_already_set();
    PyObject *r = F.sleep_meth(F.sleep_self, cycles);
    Py_DECREF(cycles);
    if (!r) throw py::error_already_set();
    Py_DECREF(r);
  }
}

// A rank's exit status when an object the engine calls through was altered (evaluator/timer/__init__.py): ended there,
// with nothing for the solution to catch.
constexpr int ENGINE_ALTERED_EXIT = 89;
// The allocator the engine kept at open for this device, if its table of functions is still the one it had then.
c10::Allocator *allocator(c10::DeviceType device) {
  bool cuda = device == c10::DeviceType::CUDA;
  c10::Allocator *a = cuda ? F.cuda_allocator : F.cpu_allocator;
  if (!a || *reinterpret_cast<const void *const *>(a) != (cuda ? F.cuda_allocator_vtable : F.cpu_allocator_vtable)) {
    static const char msg[] = "an allocator the evaluator's engine allocates with was altered (its table of functions "
                              "moved)\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(ENGINE_ALTERED_EXIT);
  }
  return a;
}

c10d::Backend *backend() {
  c10d::Backend *b = F.backend.get();
  if (*reinterpret_cast<const void *const *>(b) != F.backend_vtable) {
    static const char msg[] = "the process group's backend was not the evaluator's (its table of functions moved)\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(ENGINE_ALTERED_EXIT);
  }
  return b;
}

void flush_and_align() {
  if (!F.cuda) return;
  check_cu(D.memset8(F.flush_ptr, 0, F.flush_bytes, F.stream), "L2 flush");
  std::vector<at::Tensor> v{F.one};
  backend()->allreduce(v)->wait();  // NCCL's wait makes the stream wait: it does not block the host
}

// ---- memory shared between values ----------------------------------------------------------------------------------
// The bytes a tensor's storage spans. Two values share memory when their spans overlap, whatever StorageImpl each was
// given: a second one over the same bytes (torch.from_numpy(x.numpy()), from_blob) is no different from the first.
struct Span {
  uintptr_t lo, hi;
};
Span span_of(const at::Tensor &t) {
  uintptr_t lo = reinterpret_cast<uintptr_t>(t.storage().data());
  return {lo, lo + t.storage().nbytes()};
}
// Host and device memory share one address space (CUDA's unified addressing), so bytes are compared by address alone:
// a storage's own note of its device is the solution's memory (a red team named another device and an output over
// its input's bytes no longer overlapped it).
bool overlap(const Span &a, const Span &b) { return a.lo < b.hi && b.lo < a.hi; }

// The bytes an output's view reaches from the address the engine reads it from, as the engine copies it (a
// contiguous one as numel × itemsize bytes, another by its sizes and strides): its storage's note of its own size is
// the solution's memory too (a red team zeroed it). The address is read without materialising anything: a mutable
// read runs the storage's materialiser and copy-on-write copy, function pointers in the solution's memory (red teams
// ran Python there, and a lazy clone of an input copied itself apart only then). Geometry whose arithmetic overflows
// (a stride of -2^62 wrapped a view away from its input) is refused.
Span view_span(const at::Tensor &t) {
  const c10::TensorImpl *impl = t.unsafeGetTensorImpl();
  uintptr_t p = reinterpret_cast<uintptr_t>(impl->data());  // the const read: materialises nothing
  int64_t item = static_cast<int64_t>(impl->itemsize()), lo = 0, hi = 0;
  if (impl->is_contiguous()) {
    if (__builtin_mul_overflow(impl->numel(), item, &hi)) fail("an output's size overflows");
    return {p, p + static_cast<uintptr_t>(hi)};
  }
  for (int64_t d = 0; d < impl->dim(); ++d) {
    int64_t reach;
    if (impl->size(d) < 1 || __builtin_mul_overflow(impl->size(d) - 1, impl->stride(d), &reach) ||
        __builtin_mul_overflow(reach, item, &reach) || __builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi))
      fail("an output's sizes and strides reach outside any memory");
  }
  return {p + static_cast<uintptr_t>(lo), p + static_cast<uintptr_t>(hi) + static_cast<uintptr_t>(item)};
}

// ---- inputs: fresh storage per call ---------------------------------------------------------------------------------
struct Given {
  std::vector<at::Tensor> tensors;   // every call's, in order; undefined where the input is None
  std::vector<c10::StorageImpl *> storages;
  std::vector<void *> pointers;
  std::vector<size_t> sizes;         // each input's storage, in bytes, as allocated
  std::vector<std::vector<int64_t>> shapes;
  std::vector<PyObject *> args;      // the tuple each call of the step gets (owned until held or released)
  size_t per_call = 0;               // inputs per call

  Span span(size_t k) const {  // input k's storage as allocated (empty where the input is None)
    uintptr_t lo = reinterpret_cast<uintptr_t>(pointers[k]);
    return {lo, lo + sizes[k]};
  }
  size_t extent = 0;                 // where the feed's last input ends: consume() zeroes up to here
  FeedData feed;                     // where the data was
  std::vector<size_t> staged;        // GPU hosts: each input's offset in the staging buffer
  uint64_t stage_base = 0;           // GPU hosts: the staging buffer this call's inputs wait in (none when gated)

  ~Given() {
    for (PyObject *a : args) Py_XDECREF(a);
  }
};

// A tensor over ``nbytes`` of device memory at ``ptr`` that it does not own: a gated input, in the device feed. Its
// storage and implementation are made here for this call alone, without the dispatcher.
at::Tensor over_device(uint64_t ptr, size_t nbytes, const std::vector<int64_t> &shape, c10::ScalarType dtype) {
  c10::Device device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(F.device_index));
  c10::Storage storage(c10::Storage::use_byte_size_t(), static_cast<int64_t>(nbytes),
                       c10::DataPtr(reinterpret_cast<void *>(ptr), device), nullptr, false);
  at::Tensor t = at::detail::make_tensor<c10::TensorImpl>(std::move(storage),
                                                           c10::DispatchKeySet(c10::DispatchKey::CUDA),
                                                           c10::scalarTypeToTypeMeta(dtype));
  t.unsafeGetTensorImpl()->set_sizes_contiguous(shape);
  return t;
}

// GPU hosts: at least ``n`` bytes of private memory, page-locked, to unmask inputs into before their copy to the device
// (anonymous and private: no peer can map it, and the slot never holds them unmasked).
unsigned char *unmasked_room(size_t n) {
  Mapping &m = S.unmasked;
  if (m.size < n) {
    const size_t size = std::max(n, 2 * m.size);
    if (m.registered && D.host_unregister) D.host_unregister(m.addr);
    if (m.addr) munmap(m.addr, m.size);
    m = Mapping();
    void *a = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED) fail("no memory to unmask the inputs in");
    m.addr = a;
    m.size = size;
    m.registered = D.host_register && D.host_register(a, size, 1u) == 0;  // PORTABLE
  }
  return static_cast<unsigned char *>(m.addr);
}

// The feed holds the inputs of ``calls`` calls side by side (a batch: evaluator/host/batch.py), each call's in its
// own fresh storage, masked under ``key`` (apply_mask).
void make_inputs(Mapping &feed, uint32_t calls, Given &g, const MaskKey &key) {
  std::vector<Entry> entries = read_feed(feed, g.feed);
  if (calls < 1 || calls > MAX_BATCH || entries.size() % calls || entries.size() / calls > MAX_ENTRIES)
    fail("the feed slot does not hold whole calls' inputs");
  if (g.feed.device && calls != 1) fail("a gated feed frame holds one call's inputs");
  size_t per_call = entries.size() / calls;
  const unsigned char *base = static_cast<const unsigned char *>(feed.addr);
  size_t staged_bytes = 0;
  for (const Entry &e : entries)
    if (e.kind != 0) staged_bytes += padded(e.nbytes);
  if (F.cuda && staged_bytes && !g.feed.device) {
    // Inputs that came through the slot: a buffer of the caching allocator's (docs/threat-model.md says what that
    // leaves open).
    if (!S.staging.defined() || static_cast<size_t>(S.staging.nbytes()) < staged_bytes)
      S.staging = at::Tensor(at::detail::empty_generic({static_cast<int64_t>(staged_bytes)},
                                                       allocator(c10::DeviceType::CUDA),
                                                       c10::DispatchKeySet(c10::DispatchKey::CUDA), at::kByte,
                                                       std::nullopt));
    g.stage_base = reinterpret_cast<uint64_t>(S.staging.data_ptr());
  }
  unsigned char *clear = F.cuda && staged_bytes && !g.feed.device ? unmasked_room(feed.size) : nullptr;
  size_t at_staging = 0;
  for (size_t k = 0; k < entries.size(); ++k) {
    const Entry &e = entries[k];
    g.extent = std::max<size_t>(g.extent, padded(e.offset + e.nbytes));
    if (e.kind == 0) {
      g.tensors.emplace_back();
      g.storages.push_back(nullptr);
      g.pointers.push_back(nullptr);
      g.sizes.push_back(0);
      g.shapes.emplace_back();
      g.staged.push_back(0);
      continue;
    }
    auto dtype = static_cast<c10::ScalarType>(e.dtype);
    g.staged.push_back(at_staging);
    at::Tensor tensor;
    if (g.feed.device) {
      // Where the judge writes it once the call's stream reaches the gate (pass_gate): until then the feed holds
      // what an earlier call left there, and nothing of this call's inputs is in this process.
      tensor = over_device(F.feed_dev + e.offset, e.nbytes, e.shape, dtype);
    } else {
      // Allocated without the dispatcher: a kernel the code under test registered for aten::empty never runs here.
      tensor = at::Tensor(F.cuda ? at::detail::empty_generic(e.shape, allocator(c10::DeviceType::CUDA),
                                                             c10::DispatchKeySet(c10::DispatchKey::CUDA), dtype,
                                                             std::nullopt)
                                 : at::detail::empty_generic(e.shape, allocator(c10::DeviceType::CPU),
                                                             c10::DispatchKeySet(c10::DispatchKey::CPU), dtype,
                                                             std::nullopt));
      // GPU inputs go to the staging buffer, not yet to the call's storage: fill_inputs() copies them there on the
      // call's stream once the spin, the flush and the alignment are queued, so work a solution starts on a stream
      // that does not wait for the call's stream finds its inputs still empty while the spin holds that stream.
      if (e.nbytes) {
        const uint64_t to = g.stage_base + at_staging;
        if (F.cuda) {
          // At the same offset as in the slot: every input's copy is queued before any is done (consume waits).
          apply_mask(clear + e.offset, base + e.offset, e.offset, e.nbytes, key);
          check_cu(D.htod(to, clear + e.offset, e.nbytes, F.stream), "input copy");
        } else {
          apply_mask(static_cast<unsigned char *>(tensor.data_ptr()), base + e.offset, e.offset, e.nbytes, key);
        }
        at_staging += padded(e.nbytes);
      }
    }
    g.storages.push_back(tensor.storage().unsafeGetStorageImpl());
    g.pointers.push_back(tensor.data_ptr());
    g.sizes.push_back(tensor.storage().nbytes());
    g.shapes.push_back(tensor.sizes().vec());
    g.tensors.push_back(std::move(tensor));
  }
  g.per_call = per_call;
}

// GPU hosts, inputs that came through the slot: the staged inputs copied into each call's own storage, on the call's
// stream, queued right before the start event (after the spin, the flush and the alignment in a timed step): nothing
// of this step's inputs is in the storage a call gets until the stream that times it reaches the call.
void fill_inputs(const Given &g) {
  if (!F.cuda) return;
  const uint64_t base = g.stage_base;
  for (size_t k = 0; k < g.tensors.size(); ++k) {
    const at::Tensor &t = g.tensors[k];
    if (!t.defined() || !t.nbytes()) continue;
    check_cu(D.dtod(reinterpret_cast<uint64_t>(g.pointers[k]), base + g.staged[k], t.nbytes(), F.stream),
             "input fill");
  }
}

// GPU hosts, a gated frame: the call's stream writes the frame's token to the feed's first word as it reaches the gate
// (after the flush and the alignment), then waits until the judge's stream, which waited for that token, spun and
// wrote the call's inputs, writes the token to the gate's release, memory only the judge can write. The solution's
// code runs only after this is queued, so whatever it starts elsewhere finds its inputs absent until the judge writes
// them, and nothing it writes holds the call's stream at the gate once they are there; the token is fresh for each
// call, so a gate armed ahead by a forged token opens nothing of a later call's. A timed call's stream records when it
// reached the gate: the host refuses a call whose gate opened in much less than the judge's spin (a forged arming while
// the call's stream was held elsewhere: timing_pass).
void pass_gate(const Given &g, bool timed) {
  if (!F.release_dev) fail("a gated frame, and this engine has no gate's release");
  // The event first: recorded after the arming, it could be held behind a switch to the judge's context, which runs
  // the whole spin and copy in between (identical code once waited 3.8 µs for a spin of 447 µs that way, one H100).
  if (timed) check_cu(D.record(F.ev_armed, F.stream), "the gate's event");
  check_cu(D.write_value64(F.stream, F.feed_dev + GATE_ARMED, g.feed.token, 0), "the gate");
  check_cu(D.wait_value64(F.stream, F.release_dev, g.feed.token, CU_STREAM_WAIT_VALUE_EQ), "the gate");
}

// Call ``j``'s arguments, made as it starts: no Python object of a later call's inputs exists before then, so a call
// cannot find them (through the collector, say) and do their work ahead, off their own calls.
PyObject *args_of(Given &g, uint32_t j) {
  PyObject *args = PyTuple_New(static_cast<Py_ssize_t>(g.per_call));
  if (!args) throw py::error_already_set();
  g.args.push_back(args);
  for (size_t at = 0; at < g.per_call; ++at) {
    const at::Tensor &t = g.tensors[j * g.per_call + at];
    PyObject *obj = t.defined() ? THPVariable_Wrap(t) : Py_NewRef(Py_None);
    if (!obj) throw py::error_already_set();
    PyTuple_SET_ITEM(args, static_cast<Py_ssize_t>(at), obj);
  }
  return args;
}

// The feed's data, zeroed once this call's inputs are in their own storage, and before any rank's timed call can
// start (each rank consumes its feed before the barrier that opens the timed calls): a peer that got this rank's feed
// descriptor finds nothing in it by then. Only up to the frame's end: what an earlier, larger frame left beyond it was
// zeroed by that call's consume.
void consume(Mapping &feed, const Given &g) {
  if (g.feed.device) {
    // The head and its entries in the slot; the data is not in the device feed yet (pass_gate).
    memset(feed.addr, 0, std::min(g.feed.start, feed.size));
    return;
  }
  size_t end = std::min(g.extent, feed.size);
  if (end <= FRAME_HEAD) return;
  // The head too: its counts would tell a call how many calls its window holds (evaluator/host/batch.py).
  memset(feed.addr, 0, FRAME_HEAD);
  unsigned char *data = static_cast<unsigned char *>(feed.addr) + FRAME_HEAD;
  size_t n = end - FRAME_HEAD;
  if (!F.cuda) {
    memset(data, 0, n);
    return;
  }
  // On GPU hosts the copy engines write the zeros (from the flush buffer, zero between calls), behind the input
  // copies on the same stream: several times faster than one core's memset over a page-locked feed of 100 MB.
  size_t chunk = F.flush_bytes;
  const uint64_t zeros = F.flush_ptr;
  for (size_t off = 0; off < n; off += chunk)
    check_cu(D.dtoh(data + off, zeros, std::min(chunk, n - off), F.stream), "feed zeroing");
  if (g.stage_base && S.unmasked.addr) {
    // The unmasked copy too, once the copies to the staging buffer that read it are done (the same stream): nothing
    // of this call's inputs stays in host memory past this step.
    unsigned char *clear = static_cast<unsigned char *>(S.unmasked.addr);
    const size_t m = std::min(end, S.unmasked.size);
    for (size_t off = 0; off < m; off += chunk)
      check_cu(D.dtoh(clear + off, zeros, std::min(chunk, m - off), F.stream), "input zeroing");
  }
  // The GIL is kept while the inputs exist outside the call: no Python thread runs on them off the clock.
  check_cu(D.stream_sync(F.stream), "input copy");
}

// Every rank past its consume before any rank's call starts. On GPU hosts an all-reduce of one element, waited for by
// the host (the whole context synchronised, whichever stream the code under test left current), with the GIL kept as
// in consume(); on CPU hosts the backend's barrier, without the GIL (its threads may need it to finish earlier work, a
// Python callback on a future).
void host_barrier() {
  if (!F.cuda) {
    py::gil_scoped_release nogil;
    backend()->barrier()->wait();
    return;
  }
  std::vector<at::Tensor> v{F.one};
  backend()->allreduce(v)->wait();
  check_cu(D.ctx_sync(), "barrier");
}

// Inputs whose tensor no longer owns the storage it was given (Tensor.set_, a .data swap, a resize).
std::vector<std::string> swapped_inputs(const Given &g) {
  std::vector<std::string> out;
  for (size_t k = 0; k < g.tensors.size(); ++k) {
    const at::Tensor &t = g.tensors[k];
    if (!t.defined()) continue;
    auto *impl = t.unsafeGetTensorImpl();
    bool same = impl->has_storage() && impl->storage().unsafeGetStorageImpl() == g.storages[k] &&
                impl->storage_offset() == 0 && impl->sizes().vec() == g.shapes[k] &&
                impl->storage().data() == g.pointers[k];
    if (!same)
      out.push_back("input " + std::to_string(k % std::max<size_t>(g.per_call, 1)) +
                    (g.tensors.size() > g.per_call ? " of call " + std::to_string(k / g.per_call) : ""));
  }
  return out;
}

// ---- outputs ---------------------------------------------------------------------------------------------------------
struct Taken {
  std::vector<PyObject *> values;  // borrowed from the result
  std::vector<std::string> devices, aliases, refused;
};

// A call's result as its outputs: exact tuples and lists (or torch's own result tuples) hold several; nothing of the
// code under test (its __iter__, its __getitem__) runs to find them.
std::vector<PyObject *> outputs_of(PyObject *result) {
  std::vector<PyObject *> out;
  PyTypeObject *type = Py_TYPE(result);
  // By pointer: a set lookup would hash the type through its metaclass, a slot the code under test can replace.
  bool several = type == &PyTuple_Type || type == &PyList_Type;
  for (int k = 0; k < F.n_result_tuples; ++k) several = several || type == F.result_tuples[k];
  if (!several) {
    out.push_back(result);
    return out;
  }
  if (type == &PyList_Type) {
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(result); ++k) out.push_back(PyList_GET_ITEM(result, k));
  } else {
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(result); ++k) out.push_back(PyTuple_GET_ITEM(result, k));
  }
  return out;
}

const at::Tensor *plain_tensor(PyObject *o) {
  return Py_TYPE(o) == F.tensor_type ? &THPVariable_Unpack(o) : nullptr;
}

bool is_tensor_subclass(PyObject *o) {
  return Py_TYPE(o) != F.tensor_type && PyType_IsSubtype(Py_TYPE(o), F.tensor_type);
}

// Copies a tensor's elements, in order, to ``dst``: host memory, or with ``to_device`` memory of the tensor's own GPU
// (a window's capture of a call's outputs). GPU copies are queued on the call's stream.
void copy_out(const at::Tensor &t, unsigned char *dst, size_t nbytes, const std::string &label, bool to_device = false) {
  if (!nbytes) return;
  auto *impl = t.unsafeGetTensorImpl();
  size_t es = impl->itemsize();
  const unsigned char *src = static_cast<const unsigned char *>(impl->data());
  bool on_cuda = impl->device().is_cuda();
  auto piece = [&](unsigned char *to, const unsigned char *from, size_t n) {
    if (to_device)
      check_cu(D.dtod(reinterpret_cast<uint64_t>(to), reinterpret_cast<uint64_t>(from), n, F.stream), "output copy");
    else
      check_cu(D.dtoh(to, reinterpret_cast<uint64_t>(from), n, F.stream), "output copy");
  };
  if (impl->is_contiguous()) {
    if (on_cuda)
      piece(dst, src, nbytes);
    else
      memcpy(dst, src, nbytes);
    return;
  }
  auto sizes = impl->sizes().vec();
  auto strides = impl->strides().vec();
  int nd = static_cast<int>(sizes.size());
  int64_t inner = sizes[nd - 1], inner_stride = strides[nd - 1];
  int64_t pieces = impl->numel() / std::max<int64_t>(inner, 1);
  if (on_cuda && pieces > MAX_PIECES)
    fail(label + " is a non-contiguous view in " + std::to_string(pieces) +
         " pieces: return it .contiguous()");
  std::vector<int64_t> idx(nd, 0);
  unsigned char *out = dst;
  for (int64_t p = 0; p < pieces; ++p) {
    int64_t off = 0;
    for (int d = 0; d < nd - 1; ++d) off += idx[d] * strides[d];
    const unsigned char *row = src + off * static_cast<int64_t>(es);
    if (on_cuda) {
      if (inner_stride == 1) {
        piece(out, row, inner * es);
      } else if (inner_stride > 0) {
        CUDA_MEMCPY2D_st c{};
        c.srcMemoryType = 2;  // device
        c.srcDevice = reinterpret_cast<uint64_t>(row);
        c.srcPitch = inner_stride * es;
        if (to_device) {
          c.dstMemoryType = 2;
          c.dstDevice = reinterpret_cast<uint64_t>(out);
        } else {
          c.dstMemoryType = 1;  // host
          c.dstHost = out;
        }
        c.dstPitch = es;
        c.WidthInBytes = es;
        c.Height = inner;
        check_cu(D.memcpy2d(&c, F.stream), "output copy");
      } else {
        for (int64_t j = 0; j < inner; ++j) piece(out + j * es, row, es);
      }
    } else {
      for (int64_t j = 0; j < inner; ++j) memcpy(out + j * es, row + j * inner_stride * es, es);
    }
    out += inner * es;
    for (int d = nd - 2; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

bool has_strided_cuda_output(const std::vector<PyObject *> &outputs) {
  for (PyObject *o : outputs) {
    const at::Tensor *t = plain_tensor(o);
    if (t && t->layout() == c10::kStrided && t->unsafeGetTensorImpl()->has_storage() && t->device().is_cuda() &&
        !t->unsafeGetTensorImpl()->is_contiguous())
      return true;
  }
  return false;
}

// A window's calls have their outputs taken as each returns: copied (on the call's stream, on GPUs) into tensors of
// the engine's own, from which the frame is written after the window. A call that returns a tensor and fills it later
// (a window's last call doing its earlier calls' work, when their outputs were copied only after it) is so taken as it
// was when its call returned. The copies are inside the window on both sides. What cannot be copied this way (a
// subclass, a tensor of another device or of no storage) is kept as it was returned, for write_frame to refuse.
struct Captured {
  std::vector<PyObject *> outputs;  // owned: the copies, or the calls' own objects where not copied
  Captured() = default;
  Captured(const Captured &) = delete;
  Captured &operator=(const Captured &) = delete;
  ~Captured() {
    for (PyObject *o : outputs) Py_XDECREF(o);
  }
};

// Outputs of one call that share memory are named, as write_frame names them; calls that return the same buffer (a
// persistent output, as one call a window may) are not: each was taken before the next call ran.
void capture(PyObject *result, uint32_t call, Captured &c, Taken &taken) {
  std::vector<PyObject *> one = outputs_of(result);
  std::vector<std::pair<Span, std::string>> storages;
  for (size_t k = 0; k < one.size(); ++k) {
    PyObject *o = one[k];
    const at::Tensor *t = plain_tensor(o);
    bool plain = t && t->layout() == c10::kStrided && t->unsafeGetTensorImpl()->has_storage();
    bool cuda = plain && t->device().is_cuda();
    bool here = plain && (F.cuda ? cuda && t->device().index() == F.device_index : t->device().is_cpu());
    if (!here) {
      Py_INCREF(o);
      c.outputs.push_back(o);
      continue;
    }
    std::string label = "output " + std::to_string(k) + " of call " + std::to_string(call);
    if (t->numel()) {
      Span here_span = span_of(*t);
      for (auto &sp : storages)
        if (overlap(sp.first, here_span)) taken.aliases.push_back(label + " shares memory with " + sp.second);
      storages.emplace_back(here_span, label);
    }
    // Allocated without the dispatcher, as the inputs are: nothing the code under test registered runs here.
    at::Tensor copy(cuda ? at::detail::empty_generic(t->sizes(), allocator(c10::DeviceType::CUDA),
                                                     c10::DispatchKeySet(c10::DispatchKey::CUDA), t->scalar_type(),
                                                     std::nullopt)
                         : at::detail::empty_generic(t->sizes(), allocator(c10::DeviceType::CPU),
                                                     c10::DispatchKeySet(c10::DispatchKey::CPU), t->scalar_type(),
                                                     std::nullopt));
    copy_out(*t, static_cast<unsigned char *>(copy.data_ptr()), t->nbytes(), label, cuda);
    PyObject *w = THPVariable_Wrap(copy);
    if (!w) throw py::error_already_set();
    c.outputs.push_back(w);
  }
}

// A timed call's outputs that share memory with its inputs, named as write_frame names them for untimed calls (which
// copy the inputs back too): an in-place solution that returns its input is refused in a timed call as in a trial.
void input_aliases(const std::vector<PyObject *> &results, const Given &g, uint32_t calls, Taken &taken) {
  for (size_t j = 0; j < results.size(); ++j) {
    std::vector<PyObject *> one = outputs_of(results[j]);
    for (size_t k = 0; k < one.size(); ++k) {
      const at::Tensor *t = plain_tensor(one[k]);
      if (!t || !t->unsafeGetTensorImpl()->has_storage() || !t->numel()) continue;
      Span out = view_span(*t);
      for (size_t m = 0; m < g.per_call; ++m) {
        size_t at = j * g.per_call + m;
        if (at < g.pointers.size() && g.pointers[at] && overlap(g.span(at), out)) {
          std::string of = calls > 1 ? " of call " + std::to_string(j) : "";
          taken.aliases.push_back("output " + std::to_string(k) + of + " shares memory with input " +
                                  std::to_string(m) + of);
        }
      }
    }
  }
}

// Writes the outputs (and, for untimed calls, the inputs as they are after the call) into the out slot as one frame;
// returns how many bytes of the slot it fills. On GPU hosts with an out feed, a frame whose every tensor is
// on this rank's device and which fits there has only its head in the slot (DEVICE_FRAME_MAGIC) and its data in the
// out feed, at the offsets the head names as though the head were in front of it there too: copied on the device
// (tp_mlp at its bench size returns 64 MiB a call, which cost both sides a copy to host memory and a CRC of it, and
// the host and the judge a copy each). ``device_bytes``: how many bytes of data went to the out feed (0: none). The
// same rule on both sides, whose out feeds are of one size: a frame of the same tensors goes the same way.
size_t write_frame(Mapping &out, const std::vector<PyObject *> &outputs, size_t per_call, const Given *inputs_after,
                   Taken &taken, size_t *device_bytes) {
  *device_bytes = 0;
  size_t batch = per_call ? outputs.size() / per_call : 1;
  struct Item { const at::Tensor *t; std::string label; };
  std::vector<Item> items;
  for (size_t k = 0; k < outputs.size(); ++k) {
    PyObject *o = outputs[k];
    const at::Tensor *t = plain_tensor(o);
    std::string label = "output " + std::to_string(per_call ? k % per_call : k) +
                        (batch > 1 ? " of call " + std::to_string(k / per_call) : "");
    if (is_tensor_subclass(o)) {
      taken.refused.push_back(label + " is a " + std::string(Py_TYPE(o)->tp_name) + ", a tensor subclass");
      t = nullptr;
    } else if (t && (t->layout() != c10::kStrided || !t->unsafeGetTensorImpl()->has_storage())) {
      taken.refused.push_back(label + " is not a plain strided tensor");
      t = nullptr;
    }
    taken.devices.push_back(t ? t->device().str() : std::string());
    if (t && F.cuda && t->device().is_cuda() && t->device().index() != F.device_index) t = nullptr;
    items.push_back({t, label});
  }
  size_t n_out = items.size();
  if (inputs_after)
    for (size_t k = 0; k < inputs_after->tensors.size(); ++k)
      items.push_back({inputs_after->tensors[k].defined() ? &inputs_after->tensors[k] : nullptr,
                       "input " + std::to_string(k)});
  if (items.size() > MAX_FRAME_ENTRIES) fail("a call returned more than " + std::to_string(MAX_ENTRIES) + " outputs");
  size_t head = padded(FRAME_HEAD + items.size() * ENTRY), data = 0;
  std::vector<size_t> offsets;
  for (auto &it : items) {
    offsets.push_back(data);
    if (it.t) data += padded(it.t->nbytes());
  }
  size_t need = head + data;
  bool on_device = F.out_dev && data >= DEVICE_FRAME_MIN && need <= F.out_dev_bytes;
  // A strided output too (copied piece by piece, on the device): the side whose frame went through host memory
  // would pay a CRC and a copy there that the other does not, and the host's clock would see it as hidden work.
  for (auto &it : items)
    on_device = on_device && (!it.t || (it.t->device().is_cuda() && it.t->device().index() == F.device_index));
  if (on_device) need = head;
  if (need > out.size) {
    size_t size = std::max(need + (GROW - need % GROW) % GROW, 2 * out.size);
    if (ftruncate(out.fd, static_cast<off_t>(size)) != 0) fail("the output slot could not grow");
    remap(out, size);
  }
  unsigned char *base = static_cast<unsigned char *>(out.addr);
  memset(base, 0, head);
  memcpy(base, on_device ? DEVICE_FRAME_MAGIC : FRAME_MAGIC, 8);
  uint32_t count = static_cast<uint32_t>(items.size()), outs = static_cast<uint32_t>(n_out);
  memcpy(base + 8, &count, 4);
  memcpy(base + 12, &outs, 4);
  for (size_t k = 0; k < items.size(); ++k) {
    unsigned char *e = base + FRAME_HEAD + k * ENTRY;
    const at::Tensor *t = items[k].t;
    if (!t) continue;
    uint64_t off = offsets[k], nbytes = t->nbytes();
    e[0] = 1;
    e[1] = static_cast<uint8_t>(t->scalar_type());
    if (!known_dtype(e[1])) fail(items[k].label + " has a dtype a result cannot hold");
    int nd = static_cast<int>(t->dim());
    if (nd > MAX_DIMS) fail(items[k].label + " has more than 8 dimensions");
    e[2] = static_cast<uint8_t>(nd);
    memcpy(e + 8, &off, 8);
    memcpy(e + 16, &nbytes, 8);
    for (int d = 0; d < nd; ++d) {
      int64_t n = t->size(d);
      memcpy(e + 24 + 8 * d, &n, 8);
    }
    if (on_device) {
      copy_out(*t, reinterpret_cast<unsigned char *>(F.out_dev + head + off), nbytes, items[k].label, true);
      if (padded(nbytes) > nbytes)
        check_cu(D.memset8(F.out_dev + head + off + nbytes, 0, padded(nbytes) - nbytes, F.stream), "output padding");
    } else {
      copy_out(*t, base + head + off, nbytes, items[k].label);
      memset(base + head + off + nbytes, 0, padded(nbytes) - nbytes);
    }
  }
  if (on_device) *device_bytes = data;
  // Outputs that share memory with an input or with one another.
  std::vector<std::pair<Span, std::string>> spans;
  if (inputs_after)
    for (size_t k = 0; k < inputs_after->tensors.size(); ++k)
      if (inputs_after->tensors[k].defined() && inputs_after->tensors[k].numel() && inputs_after->pointers[k])
        spans.emplace_back(inputs_after->span(k), "input " + std::to_string(k));
  for (size_t k = 0; k < n_out; ++k) {
    const at::Tensor *t = items[k].t;
    if (!t || !t->numel()) continue;
    Span here = span_of(*t);
    for (auto &sp : spans)
      if (overlap(sp.first, here)) taken.aliases.push_back(items[k].label + " shares memory with " + sp.second);
    spans.emplace_back(here, items[k].label);
  }
  return need;
}

// ---- process-level rules checked after every call ------------------------------------------------------------------
std::vector<std::string> changed_environment() {
  std::vector<std::string> out;
  for (int k = 0; k < F.n_watched; ++k) {
    const Watched &w = F.watched_env[k];
    const char *v = getenv(w.name);
    if ((v != nullptr) != w.set || (v && strcmp(v, w.value) != 0)) out.push_back(w.name);
  }
  return out;
}

// The signals a fault raises, left unblocked after a call (F.after_call, set as the engine opens).
constexpr int FAULTS[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT};

// The harness owns every signal's disposition: one the call changed is put back the moment the call returns, before
// anything else, and named in the report. A handler so runs only inside a call, where its work is timed; libraries
// that install one on first use (inductor's compile workers, SIGHUP) keep working inside the calls.
// Returns the signals put back, as a mask: nothing here allocates, since it runs before the engine compares the tables
// of library addresses (check_bound_tables), and an allocation goes through one.
// After every call, a window's too: blocking the other signals between calls holds only the calling thread, and the
// kernel hands a signal sent to the process to any thread that does not block it (a red team's handler ran in gloo's
// threads between a window's calls while it stayed installed).
uint64_t restore_signals() {
  uint64_t changed = 0;
  for (int sig = 1; sig < 65; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction now;
    if (sigaction(sig, nullptr, &now) != 0) continue;
    if (now.sa_handler != F.dispositions[sig].sa_handler) {
      sigaction(sig, &F.dispositions[sig], nullptr);
      changed |= uint64_t{1} << (sig - 1);
    }
  }
  return changed;
}

std::vector<std::string> signal_names(uint64_t changed) {
  std::vector<std::string> out;
  for (int sig = 1; sig < 65; ++sig) {
    if (!(changed >> (sig - 1) & 1)) continue;
    const char *name = sigabbrev_np(sig);
    out.push_back(std::string("SIG") + (name ? name : std::to_string(sig).c_str()));
  }
  return out;
}

// Every tensor the engine reads after the call (each output, each input) must be a dense tensor's implementation with
// no custom policy: its virtual functions are then torch's own, and so are the values the rules read. A red team
// pointed an output's implementation at a copied table whose device function was Python, and the aliasing rule asked
// it where the output lay.
struct PolicyOf : c10::TensorImpl {
  static bool custom(const c10::TensorImpl *impl) {
    auto *p = static_cast<const PolicyOf *>(impl);
    return p->matches_policy(SizesStridesPolicy::CustomStrides) ||
           p->matches_python_custom(SizesStridesPolicy::CustomStrides);
  }
};
static_assert(sizeof(c10::TensorImpl) <= IMPL_BYTES, "IMPL_BYTES must hold a TensorImpl");
bool plain_impl(const at::Tensor &t) {
  const c10::TensorImpl *impl = t.unsafeGetTensorImpl();
  if (*reinterpret_cast<const void *const *>(impl) != F.impl_vtable || PolicyOf::custom(impl) ||
      impl->key_set().has(c10::DispatchKey::Python))
    return false;
  const auto *bytes = reinterpret_cast<const unsigned char *>(impl);
  for (size_t k = 0; k < sizeof(c10::TensorImpl); ++k)
    if ((bytes[k] & F.policy_mask[k]) != F.policy_plain[k]) return false;
  return true;
}

// The policy bits: each public setter of c10::TensorImpl's custom and Python policies applied to a fresh tensor, and
// the bytes it changed kept (their plain values beside them).
void find_policy_bits() {
  using Set = void (*)(c10::TensorImpl *);
  const Set setters[] = {
      [](c10::TensorImpl *i) { i->set_custom_device(true); },
      [](c10::TensorImpl *i) { i->set_custom_layout(true); },
      [](c10::TensorImpl *i) { i->set_python_custom_device(true); },
      [](c10::TensorImpl *i) { i->set_python_custom_layout(true); },
      [](c10::TensorImpl *i) { i->set_custom_sizes_strides(c10::TensorImpl::SizesStridesPolicy::CustomSizes); },
      [](c10::TensorImpl *i) { i->set_python_custom_sizes_strides(c10::TensorImpl::SizesStridesPolicy::CustomSizes); },
  };
  for (Set set : setters) {
    at::Tensor probe(at::detail::empty_generic({1}, c10::GetAllocator(c10::DeviceType::CPU),
                                               c10::DispatchKeySet(c10::DispatchKey::CPU), at::kByte, std::nullopt));
    c10::TensorImpl *impl = probe.unsafeGetTensorImpl();
    unsigned char before[IMPL_BYTES];
    memcpy(before, impl, sizeof(c10::TensorImpl));
    set(impl);
    const auto *after = reinterpret_cast<const unsigned char *>(impl);
    for (size_t k = 0; k < sizeof(c10::TensorImpl); ++k) {
      unsigned char bits = before[k] ^ after[k];
      F.policy_mask[k] |= bits;
      F.policy_plain[k] = static_cast<unsigned char>((F.policy_plain[k] & ~bits) | (before[k] & bits));
    }
  }
}

// Once a step's calls returned and the tables are compared: torch.Tensor's dispatch is still torch's own.
bool tensor_dispatch_kept() { return _PyType_Lookup(F.tensor_type, F.dispatch_name) == F.tensor_dispatch; }

std::string counts_json() {
  std::string out = "{";
  bool first = true;
  for (auto &kv : comm_counts) {
    out += (first ? "" : ", ") + json_str(kv.first) + ": " + std::to_string(kv.second);
    first = false;
  }
  comm_counts.clear();
  return out + "}";
}

// ---- one step ---------------------------------------------------------------------------------------------------------
// Nothing after the call executes Python, so a profile or trace function the call left set never runs; clearing it
// would (it raises an audit event, and the old function's release can run a finalizer). The collector could run the
// call's finalizers at any allocation: it is off until the next call's start.
void quiet_after_call() { PyGC_Disable(); }

void release_held() {
  for (PyObject *r : S.held_results) Py_DECREF(r);
  for (PyObject *a : S.held_args) Py_DECREF(a);
  S.held_results.clear();
  S.held_args.clear();
  S.held_inputs.clear();
}

struct StepResult {
  double elapsed_us = 0, launch_us = 0, measure_us = 0, save_us = 0;
  // A window's host time inside its calls (each PyObject_Call) and between them (arguments, events, signals, the
  // outputs taken): a diagnosis of where the two sides' windows differ, not a figure any check uses.
  double calls_us = 0, between_us = 0;
  // A timed call's frame as the rank replies: the CRC-32C of the out slot's, or for a frame whose data is in the out
  // feed the device digest (device_frame_digest), which an untimed call's such frame carries too; else -1.
  int64_t digest = -1;
  double gate_us = -1.0;    // a gated timed call: from the stream's arrival at the gate to its start (else -1)
  size_t nbytes = 0;        // of the out slot
  size_t device_bytes = 0;  // of the out feed (a device frame's data)
  Taken taken;
  std::vector<std::string> swapped, environment, signals;
  std::string calls;
};

// timed: a timed window (spin, flush, alignment, the sample written) of ``calls`` calls back to back, each on inputs of
// its own; else one untimed call whose outputs and inputs-after are written for the judge.
StepResult step(bool timed, PyObject *call, Mapping &feed, Mapping &out, uint32_t calls, const MaskKey &key) {
  if (!F.opened) fail("the engine is not open");
  if (!timed && calls != 1) fail("an untimed step is one call");
  double t0 = now_us();
  // The inputs are made and the feed consumed before the barrier, so no rank's timed call can start while a peer's
  // feed still holds its inputs (on GPUs the copies into the staging buffer are waited for). Whatever runs during the
  // barrier is inside the host's window (evaluator/host/host_clock.py). On GPUs the spin kernel then holds the stream
  // while the host queues the flush, the alignment, the inputs' fill from the staging buffer and the calls, so the
  // events time the calls' work and not their launch, and work started off the call's stream finds no inputs under
  // the spin. A batch's calls follow one another on the device with nothing of ours between them: one flush, one
  // alignment and one fill in front of the first.
  Given g;
  make_inputs(feed, calls, g, key);
  consume(feed, g);
  const bool gated = g.feed.device;
  if (timed) {
    host_barrier();
    prepare_timed(!gated);
    flush_and_align();
    if (gated)
      pass_gate(g, true);
    else
      fill_inputs(g);
  } else if (F.cuda) {
    // An untimed call starts with its inputs in place, whichever stream it reads them on.
    if (gated)
      pass_gate(g, false);
    else
      fill_inputs(g);
    check_cu(D.stream_sync(F.stream), "input fill");
  }
  // A window's calls are timed one by one on GPUs: each call's outputs are copied between its stop and the next
  // call's start, so the copies (on both sides) stay outside the samples.
  bool per_call_events = F.cuda && calls > 1;
  while (per_call_events && S.call_events.size() < calls) {
    void *a = nullptr, *b = nullptr;
    if (D.event_create(&a, 0) || D.event_create(&b, 0)) fail("the timer could not make a call's events");
    S.call_events.emplace_back(a, b);
  }
  double h0, h1;
  std::vector<PyObject *> results;
  results.reserve(calls);  // no allocation between the calls' return and the tables' comparison
  uint64_t changed_signals = 0;
  if (F.cuda) check_cu(D.record(F.ev_start, F.stream), "start event");
  h0 = now_us();
  PyGC_Enable();
  release_held();
  bool failed = false;
  Captured captured;
  Taken window_taken;  // a window's captures (several calls): made before the calls, as they must be
  std::string refusal;
  double in_calls = 0, between_calls = 0;
  for (uint32_t j = 0; j < calls && !failed; ++j) {
    double a0 = now_us();
    PyObject *args = args_of(g, j);
    if (per_call_events) check_cu(D.record(S.call_events[j].first, F.stream), "call start event");
    pthread_sigmask(SIG_SETMASK, &F.call_mask, nullptr);
    counting.store(true);
    double c0 = now_us();
    PyObject *result = PyObject_Call(call, args, nullptr);
    pthread_sigmask(SIG_BLOCK, &F.after_call, nullptr);  // first: no handler of the call's runs in the engine
    double c1 = now_us();
    counting.store(false);
    if (per_call_events) check_cu(D.record(S.call_events[j].second, F.stream), "call stop event");
    changed_signals |= restore_signals();
    if (result) results.push_back(result);
    failed = !result;
    if (result && calls > 1 && refusal.empty()) {
      try {
        capture(result, j, captured, window_taken);
      } catch (const std::runtime_error &e) {
        refusal = e.what();  // after the window, once its results are held for release
      }
    }
    in_calls += c1 - c0;
    between_calls += (c0 - a0) + (now_us() - c1);
  }
  // A single call's stop as it returns (a strided output's copies are timed to ev_after, below).
  if (F.cuda && !per_call_events) check_cu(D.record(F.ev_end, F.stream), "stop event");
  quiet_after_call();
  h1 = now_us();
  // First, before anything allocates or reads the call's values: what the engine calls through from here on is the
  // code it was sealed with (a hook that ran and put itself back before this point had nothing to do it in but the
  // stop's record and the signals' read-back).
  check_bound_tables();
  // The step's result is made only now: containers made before the call are memory the call could prepare (a red
  // team rewrote an empty list of findings so that it read empty again once the engine added one).
  StepResult r;
  r.taken = std::move(window_taken);
  r.calls_us = in_calls;
  r.between_us = between_calls;
  r.signals = signal_names(changed_signals);
  // A timed call's GPU outputs in a strided layout are copied before the stop event: piecewise copies cost the host
  // far more than the baseline's one copy, and that cost is the layout the solution chose, so its sample carries it
  // (else the host's clock would see it as work hidden outside the sample). Contiguous outputs, the baseline's among
  // them, are copied after the stop, outside both sides' samples alike.
  std::vector<PyObject *> outputs;
  size_t per_call_out = 0;
  for (size_t j = 0; j < results.size(); ++j) {
    std::vector<PyObject *> one = outputs_of(results[j]);
    if (one.size() > MAX_ENTRIES)
      refusal = "a call returned more than " + std::to_string(MAX_ENTRIES) + " outputs";
    else if (j && one.size() != per_call_out)
      refusal = "the calls of one timed window returned different numbers of outputs";
    if (j == 0) per_call_out = one.size();
    outputs.insert(outputs.end(), one.begin(), one.end());
  }
  if (calls > 1 && refusal.empty() && !failed) outputs = captured.outputs;  // one for each, in the same order
  if (refusal.empty() && !tensor_dispatch_kept())
    refusal = "torch.Tensor.__torch_dispatch__ was replaced during the call: the evaluator reads the outputs through it";
  for (PyObject *o : outputs)
    if (const at::Tensor *t = plain_tensor(o); t && refusal.empty() && !plain_impl(*t))
      refusal = "an output is not a dense tensor of torch's own implementation (its implementation's functions or "
                "policies were changed)";
  for (const at::Tensor &t : g.tensors)
    if (t.defined() && refusal.empty() && !plain_impl(t))
      refusal = "an input's implementation was changed during the call (its functions or policies)";
  bool strided = !failed && refusal.empty() && timed && F.cuda && has_strided_cuda_output(outputs);
  if (strided) r.nbytes = write_frame(out, outputs, per_call_out, nullptr, r.taken, &r.device_bytes);
  if (strided && !per_call_events) check_cu(D.record(F.ev_after, F.stream), "stop event");
  S.held_results = results;  // released inside the next step's window, or at the end
  S.held_args.swap(g.args);
  S.held_inputs = g.tensors;
  if (failed) throw py::error_already_set();
  if (!refusal.empty()) fail(refusal);
  double t1 = now_us();
  r.swapped = swapped_inputs(g);
  if (timed) input_aliases(results, g, calls, r.taken);
  if (!strided) r.nbytes = write_frame(out, outputs, per_call_out, timed ? nullptr : &g, r.taken, &r.device_bytes);
  if (F.cuda) {
    // With the GIL kept, as from the call's return to the next window: no Python thread runs while the device ends.
    int copied = D.stream_sync(F.stream);
    // Everything the call started, on any stream, ends here: a kernel left resident holds the rank until its limit.
    int synced = copied ? 0 : D.ctx_sync();
    check_cu(copied, "output copy");
    check_cu(synced, "device synchronize");
    float ms = 0.0f;
    if (per_call_events) {
      r.elapsed_us = 0.0;
      for (size_t j = 0; j < results.size(); ++j) {
        check_cu(D.elapsed(&ms, S.call_events[j].first, S.call_events[j].second), "event timing");
        r.elapsed_us += ms * 1000.0;
      }
    } else {
      check_cu(D.elapsed(&ms, F.ev_start, strided ? F.ev_after : F.ev_end), "event timing");
      r.elapsed_us = ms * 1000.0;
    }
    if (gated && timed) {
      check_cu(D.elapsed(&ms, F.ev_armed, F.ev_start), "the gate's timing");
      r.gate_us = ms * 1000.0;
    }
  } else {
    r.elapsed_us = h1 - h0;
  }
  r.launch_us = h1 - h0;
  r.measure_us = t1 - t0;
  if (r.device_bytes)
    r.digest = device_frame_digest(out.addr, r.nbytes, F.out_dev + r.nbytes, r.device_bytes);
  else if (timed)
    r.digest = out.addr && r.nbytes <= out.size ? crc32c(out.addr, r.nbytes) : 0;
  r.save_us = now_us() - t1;
  r.environment = changed_environment();
  r.calls = counts_json();
  if (timed) {
    unsigned char rec[40] = {'A', 'R', 'N', 'S'};
    uint32_t s = S.seq++;
    memcpy(rec + 4, &s, 4);
    memcpy(rec + 8, &r.elapsed_us, 8);
    memcpy(rec + 16, &r.launch_us, 8);
    uint64_t mac = siphash(rec, 24);
    memcpy(rec + 24, &mac, 8);
    same_channel(F.timer_channel);
    if (!write_all(F.timer_fd, rec, sizeof rec)) fail("the timer could not report");
  }
  return r;
}

std::string step_report(const StepResult &r) {
  std::vector<std::string> devices;
  std::string dev = "[";
  for (size_t k = 0; k < r.taken.devices.size(); ++k)
    dev += (k ? ", " : "") + (r.taken.devices[k].empty() ? std::string("null") : json_str(r.taken.devices[k]));
  dev += "]";
  return "\"devices\": " + dev + ", \"aliases\": " + json_list(r.taken.aliases) +
         ", \"subclasses\": " + json_list(r.taken.refused) + ", \"multicast_changed\": " + json_list(r.environment) +
         ", \"inputs_swapped\": " + json_list(r.swapped) + ", \"signals_changed\": " + json_list(r.signals) +
         ", \"calls\": " + r.calls;
}

// ---- the device feed (GPU hosts) -------------------------------------------------------------------------------------
// Inputs of a large problem cost more to pass through host memory than to compute (tp_mlp at its bench size: 1.5 GB a
// call, about 0.2 s an iteration over PCIe). So on GPU hosts the judge writes them into device memory of its own, an
// allocation made for nothing else (CUDA's virtual memory management), and the solution's rank of the same number maps
// that allocation by a POSIX descriptor of it: the one kind of CUDA handle that crosses the two sandboxes' PID
// namespaces, passed from the judge's rank to that rank alone, before the solution loads. The rank's engine then reads
// its inputs from there and zeroes them there, as it does a feed slot's (consume).
struct CuMemLocation {
  int type;
  int id;
};
struct CuMemAllocationProp {  // CUmemAllocationProp
  int type;
  int requested_handle_types;
  CuMemLocation location;
  void *win32_metadata;
  unsigned char compression_type, gpu_direct_rdma_capable;
  unsigned short usage;
  unsigned char reserved[4];
};
struct CuMemAccessDesc {
  CuMemLocation location;
  int flags;
};
constexpr int CU_MEM_ALLOCATION_TYPE_PINNED = 1, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1,
              CU_MEM_LOCATION_TYPE_DEVICE = 1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3;
typedef int (*cu_mem_granularity_t)(size_t *, const CuMemAllocationProp *, int);
typedef int (*cu_mem_create_t)(unsigned long long *, size_t, const CuMemAllocationProp *, unsigned long long);
typedef int (*cu_mem_export_t)(void *, unsigned long long, int, unsigned long long);
typedef int (*cu_mem_import_t)(unsigned long long *, void *, int);
typedef int (*cu_mem_reserve_t)(uint64_t *, size_t, size_t, uint64_t, unsigned long long);
typedef int (*cu_mem_map_t)(uint64_t, size_t, size_t, unsigned long long, unsigned long long);
typedef int (*cu_mem_release_t)(unsigned long long);
typedef int (*cu_mem_set_access_t)(uint64_t, size_t, const CuMemAccessDesc *, size_t);

// A CUDA driver function by name, or null where the driver has none (``what`` names the need, if the driver is absent).
template <class T>
T cu_function(const char *name, const char *what) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) fail(std::string("libcuda.so.1 not found for ") + what);
  return reinterpret_cast<T>(dlsym(lib, name));
}

struct DeviceMemory {
  uint64_t ptr = 0;
  size_t bytes = 0;
  int fd = -1;  // the exported descriptor, where one was asked for
};

// ``import_fd`` < 0: a new allocation of at least ``nbytes``, zeroed (exported as a descriptor when ``exported``);
// otherwise the allocation that descriptor names, of exactly ``nbytes``. Mapped on this rank's device, read and write.
DeviceMemory device_memory(size_t nbytes, int import_fd, bool exported) {
  if (!F.opened || !F.cuda) fail("a device feed needs the engine open on a GPU");
  if (!D.wait_value64 || !D.write_value64 || !F.gate_spin_fn)
    fail("the CUDA driver has no stream memory operations for a device feed's gate");
  if (engine_sealed) fail("a device feed is made before the engine is sealed");
  const char *why = "the device feed";
  auto granularity = cu_function<cu_mem_granularity_t>("cuMemGetAllocationGranularity", why);
  auto create = cu_function<cu_mem_create_t>("cuMemCreate", why);
  auto exporter = cu_function<cu_mem_export_t>("cuMemExportToShareableHandle", why);
  auto importer = cu_function<cu_mem_import_t>("cuMemImportFromShareableHandle", why);
  auto reserve = cu_function<cu_mem_reserve_t>("cuMemAddressReserve", why);
  auto map = cu_function<cu_mem_map_t>("cuMemMap", why);
  auto release = cu_function<cu_mem_release_t>("cuMemRelease", why);
  auto set_access = cu_function<cu_mem_set_access_t>("cuMemSetAccess", why);
  if (!granularity || !create || !exporter || !importer || !reserve || !map || !release || !set_access)
    fail("the CUDA driver has no virtual memory management for the device feed");
  CuMemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requested_handle_types = exported || import_fd >= 0 ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : 0;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, F.device_index};
  size_t grain = 0;
  check_cu(granularity(&grain, &prop, 0), "device feed granularity");
  if (!grain || !nbytes) fail("the device feed has no size");
  size_t bytes = nbytes + (grain - nbytes % grain) % grain;
  unsigned long long handle = 0;
  DeviceMemory m;
  if (import_fd < 0) {
    check_cu(create(&handle, bytes, &prop, 0), "device feed allocation");
    if (exported) check_cu(exporter(&m.fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "device feed export");
  } else {
    if (bytes != nbytes) fail("the device feed's size is not a whole number of the device's pages");
    check_cu(importer(&handle, reinterpret_cast<void *>(static_cast<intptr_t>(import_fd)),
                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
             "device feed import");
  }
  check_cu(reserve(&m.ptr, bytes, grain, 0, 0), "device feed address");
  check_cu(map(m.ptr, bytes, 0, handle, 0), "device feed mapping");
  check_cu(release(handle), "device feed handle");  // the mapping keeps the memory
  CuMemAccessDesc access{{CU_MEM_LOCATION_TYPE_DEVICE, F.device_index}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  check_cu(set_access(m.ptr, bytes, &access, 1), "device feed access");
  if (import_fd < 0) {
    check_cu(D.memset8(m.ptr, 0, bytes, F.stream), "device feed zeroing");
    check_cu(D.stream_sync(F.stream), "device feed zeroing");
  }
  m.bytes = bytes;
  return m;
}

at::Tensor device_view(const DeviceMemory &m) {
  return at::from_blob(reinterpret_cast<void *>(m.ptr), {static_cast<int64_t>(m.bytes)},
                       at::TensorOptions().dtype(at::kByte).device(at::kCUDA, F.device_index));
}

// The judge's rank: a device feed and a byte tensor over it to write inputs through (or, with ``outputs``, to read a
// side's outputs from). Exported: the descriptor for the solution's rank of the same number is returned beside it. Not
// exported: this engine's own (the baseline's).
py::tuple make_device_feed(size_t nbytes, bool exported, bool outputs) {
  not_while_serving();
  if (outputs && !F.digest_word) fail("this engine has no device digest for outputs in device memory");
  if (!exported && (outputs ? F.out_dev : F.feed_dev)) fail("the engine has that device feed already");
  DeviceMemory m = device_memory(nbytes, -1, exported);
  if (!exported) (outputs ? F.out_dev : F.feed_dev) = m.ptr;
  if (!exported) (outputs ? F.out_dev_bytes : F.feed_dev_bytes) = m.bytes;
  return py::make_tuple(m.fd, device_view(m));
}

// The solution's rank: the judge's device feed for this rank (its inputs, or with ``outputs`` where it writes its
// outputs), by the descriptor it sent, before the solution loads.
void open_device_feed(int fd, size_t nbytes, bool outputs) {
  not_while_serving();
  if (outputs && !F.digest_word) fail("this engine has no device digest for outputs in device memory");
  if (outputs ? F.out_dev : F.feed_dev) fail("the engine has that device feed already");
  DeviceMemory m = device_memory(nbytes, fd, false);
  (outputs ? F.out_dev : F.feed_dev) = m.ptr;
  (outputs ? F.out_dev_bytes : F.feed_dev_bytes) = m.bytes;
}

// ---- the judge's gates: a CUDA context of their own ----------------------------------------------------------------
// The judge queues both sides' gates in a context of their own, not the one its baseline runs in: without MPS the
// device runs one context at a time, so the solution's call always followed a switch from the context that wrote its
// inputs, and the baseline's, in the same context, did not (identical code of the bench all-reduce then read 1.02 to
// 1.04 on one H100). Now both calls follow such a switch. The gate context reads the inputs from a source buffer the
// judge lays each call's frame out in (make_gate_source, memory of CUDA's virtual memory management, which every
// context of the device in the process reaches) and writes them into the side's device feed.
typedef int (*cu_device_get_t)(int *, int);
typedef int (*cu_ctx_create_t)(void **, unsigned int, int);
typedef int (*cu_ctx_push_t)(void *);
typedef int (*cu_ctx_pop_t)(void **);
typedef int (*cu_stream_create_t)(void **, unsigned int);
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
struct GateContext {
  void *ctx = nullptr;
  void *streams[2] = {nullptr, nullptr};  // the baseline's gates, the solution's
  void *spin_fn = nullptr;
  cu_ctx_push_t push = nullptr;
  cu_ctx_pop_t pop = nullptr;
};
GateContext G;

// Runs ``f`` with the gate context current on this thread, and the context that was current before restored.
template <class Fn>
void in_gate_context(Fn f) {
  check_cu(G.push(G.ctx), "the gate context");
  try {
    f();
  } catch (...) {
    void *was = nullptr;
    G.pop(&was);
    throw;
  }
  void *was = nullptr;
  check_cu(G.pop(&was), "the gate context");
}

void open_gate_context() {
  if (G.ctx) return;
  const char *why = "the gate context";
  auto device_get = cu_function<cu_device_get_t>("cuDeviceGet", why);
  auto create = cu_function<cu_ctx_create_t>("cuCtxCreate_v2", why);
  auto stream_create = cu_function<cu_stream_create_t>("cuStreamCreate", why);
  auto load = cu_function<cu_module_load_t>("cuModuleLoadData", why);
  auto function = cu_function<cu_module_function_t>("cuModuleGetFunction", why);
  G.push = cu_function<cu_ctx_push_t>("cuCtxPushCurrent_v2", why);
  G.pop = cu_function<cu_ctx_pop_t>("cuCtxPopCurrent_v2", why);
  if (!device_get || !create || !stream_create || !load || !function || !G.push || !G.pop)
    fail("the CUDA driver cannot make the gate context");
  int device = -1;
  check_cu(device_get(&device, F.device_index), "the gate context's device");
  void *ctx = nullptr;
  check_cu(create(&ctx, 0, device), "the gate context");  // made current: popped below
  void *was = nullptr;
  check_cu(G.pop(&was), "the gate context");
  G.ctx = ctx;
  in_gate_context([&] {
    void *module = nullptr;
    std::string ptx = digest_ptx();
    check_cu(load(&module, ptx.c_str()), "the gate's spin kernel");
    check_cu(function(&G.spin_fn, module, "arena_gate_spin"), "the gate's spin kernel");
    for (void *&st : G.streams) check_cu(stream_create(&st, CU_STREAM_NON_BLOCKING), "the gate's stream");
  });
}


// The judge's rank: the gate of one call's inputs, queued in the gate context on the side's stream (``solution``):
// wait until the call's stream writes ``token`` to the first word of ``feed`` (the byte tensor make_device_feed
// returned), spin (a timed call's: the step's spin, by the device's clock), copy bytes [start, end) of ``source``
// (make_gate_source, where the judge laid the frame out and waited for it) to the same place in the feed, and write
// ``token`` to the release at ``release`` (make_gate). Returns at once: the call's stream is another context's.
void gate(const at::Tensor &feed, const at::Tensor &source, int64_t start, int64_t end, uint64_t token, bool spin,
          uint64_t release, bool solution) {
  not_while_serving();
  if (!G.ctx || !D.wait_value64 || !D.write_value64) fail("a gate needs the gate context (make_gate)");
  if (!token || !release) fail("a gate needs a token and a release");
  if (start < 64 || end < start || end > feed.nbytes() || end > source.nbytes())
    fail("a gate's inputs lie outside the feed's data or the source");
  const uint64_t to = reinterpret_cast<uint64_t>(feed.data_ptr()), from = reinterpret_cast<uint64_t>(source.data_ptr());
  void *st = G.streams[solution ? 1 : 0];
  in_gate_context([&] {
    check_cu(D.wait_value64(st, to + GATE_ARMED, token, CU_STREAM_WAIT_VALUE_EQ), "the gate");
    if (spin && S.spin_us > 0) {
      // The copy after the spin holds the call's stream too, so the spin is shorter by the least time the copy can
      // take: the stream is held as long as before, and the inputs are no sooner in the feed (tp_mlp's 1.47 GB took
      // about 1 ms a window after the spin, one H100).
      uint64_t ns = static_cast<uint64_t>(S.spin_us * 1000.0);
      uint64_t copy_ns = static_cast<uint64_t>(end - start) / GATE_COPY_BYTES_PER_NS;
      ns = copy_ns < ns / 2 ? ns - copy_ns : ns - ns / 2;
      void *args[] = {&ns};
      check_cu(D.launch(G.spin_fn, 1, 1, 1, 1, 1, 1, 0, st, args, nullptr), "the gate's spin");
    }
    if (end > start)
      check_cu(D.dtod(to + static_cast<uint64_t>(start), from + static_cast<uint64_t>(start),
                      static_cast<size_t>(end - start), st),
               "the gate's input copy");
    check_cu(D.write_value64(st, release, token, 0), "the gate");
  });
}

// The judge's rank: memory the judge lays a call's frame out in (as large as a device feed), for the gate context to
// copy from; a byte tensor over it.
at::Tensor make_gate_source(size_t nbytes) {
  not_while_serving();
  if (!G.ctx || !F.feed_dev || !F.release_dev) fail("a gate's source is made after the baseline's feed and gate");
  at::Tensor source = device_view(device_memory(nbytes, -1, false));
  // One gate on the baseline's own feed, waited for, before any is relied on: the gate context must reach the feed,
  // the source and the release page (a driver that does not let a second context reach them fails here, and the
  // judge then keeps every frame in host memory).
  const uint64_t from = reinterpret_cast<uint64_t>(source.data_ptr());
  in_gate_context([&] {
    void *st = G.streams[0];
    check_cu(D.wait_value64(st, F.feed_dev + GATE_ARMED, 0, CU_STREAM_WAIT_VALUE_EQ), "the gate's trial");
    // The spin kernel's first launch in this context too, here and not behind the first timed gate's wait: whatever
    // the driver does on a context's first launch happens now, and a launch that fails leaves frames in host memory.
    uint64_t no_ns = 0;
    void *spin_args[] = {&no_ns};
    check_cu(D.launch(G.spin_fn, 1, 1, 1, 1, 1, 1, 0, st, spin_args, nullptr), "the gate's trial");
    check_cu(D.dtod(F.feed_dev + 64, from + 64, 64, st), "the gate's trial");
    check_cu(D.write_value64(st, F.release_dev, 0, 0), "the gate's trial");
    check_cu(D.stream_sync(st), "the gate's trial");
  });
  return source;
}

// ---- the gate's release: a page of host memory only the judge writes -----------------------------------------------
typedef int (*cu_host_device_pointer_t)(uint64_t *, void *, unsigned int);
constexpr unsigned CU_MEMHOSTREGISTER_PORTABLE = 1, CU_MEMHOSTREGISTER_DEVICEMAP = 2, CU_MEMHOSTREGISTER_READ_ONLY = 8;

// ``fd``'s first page mapped (read-only unless ``writable``) and registered for the device; its device address.
uint64_t release_page(int fd, bool writable) {
  auto device_pointer = cu_function<cu_host_device_pointer_t>("cuMemHostGetDevicePointer_v2", "the gate");
  if (!device_pointer || !D.host_register) fail("the CUDA driver cannot map host memory for the gate");
  void *addr = mmap(nullptr, PAGE, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) fail("the gate's page could not be mapped");
  unsigned flags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | (writable ? 0 : CU_MEMHOSTREGISTER_READ_ONLY);
  check_cu(D.host_register(addr, PAGE, flags), "gate page registration");
  uint64_t dev = 0;
  check_cu(device_pointer(&dev, addr, 0), "gate page address");
  return dev;
}

// The judge's rank: a gate's release page. ``exported``: for the solution's rank of the same number, returned as a
// descriptor of a memory file sealed against any writer but this mapping (F_SEAL_FUTURE_WRITE), with the device
// address this process writes through; else this engine's own (the baseline's), and the descriptor is -1.
py::tuple make_gate(bool exported) {
  not_while_serving();
  if (!F.opened || !F.cuda) fail("a gate needs the engine open on a GPU");
  if (engine_sealed) fail("a gate is made before the engine is sealed");
  if (!exported && F.release_dev) fail("the engine has its gate already");
  open_gate_context();
  int fd = static_cast<int>(syscall(SYS_memfd_create, "arena-gate", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (fd < 0 || ftruncate(fd, PAGE) != 0) fail("the gate's memory file could not be made");
  uint64_t dev = release_page(fd, true);
  constexpr int SEAL_FUTURE_WRITE = 0x0010;  // F_SEAL_FUTURE_WRITE (Linux 5.1)
  if (exported && fcntl(fd, F_ADD_SEALS, SEAL_FUTURE_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    fail("the gate's memory file could not be sealed");
  if (!exported) {
    close(fd);
    fd = -1;
    F.release_dev = dev;
  }
  return py::make_tuple(fd, dev);
}

// The solution's rank: the judge's release page for this rank's gate, read-only, before the solution loads.
void open_gate(int fd) {
  not_while_serving();
  if (!F.opened || !F.cuda) fail("a gate needs the engine open on a GPU");
  if (F.release_dev) fail("the engine has its gate already");
  F.release_dev = release_page(fd, false);
}

// ---- the module's functions ------------------------------------------------------------------------------------------
void open_engine(int timer_fd, long long stream_handle, int device_index, py::object group, py::object sleep_fn,
                 double cycles_per_us, py::object result_tuples, std::vector<std::string> watched_env) {
  not_while_serving();
  if (F.opened) fail("the engine is already open");
  unsigned char key[16];
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || read(fd, key, 16) != 16) fail("no /dev/urandom for the timer key");
  close(fd);
  memcpy(&F.k0, key, 8);
  memcpy(&F.k1, key + 8, 8);
  auto pg = group.cast<c10::intrusive_ptr<c10d::ProcessGroup>>();
  F.device_index = device_index;
  if (stream_handle >= 0) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) fail("libcuda.so.1 not found for the timer");
    auto create = reinterpret_cast<cu_event_create_t>(dlsym(lib, "cuEventCreate"));
    Driver &d = D;
    d.record = reinterpret_cast<cu_event_record_t>(dlsym(lib, "cuEventRecord"));
    d.event_sync = reinterpret_cast<cu_event_sync_t>(dlsym(lib, "cuEventSynchronize"));
    d.elapsed = reinterpret_cast<cu_event_elapsed_t>(dlsym(lib, "cuEventElapsedTime"));
    d.htod = reinterpret_cast<cu_htod_t>(dlsym(lib, "cuMemcpyHtoDAsync_v2"));
    d.dtoh = reinterpret_cast<cu_dtoh_t>(dlsym(lib, "cuMemcpyDtoHAsync_v2"));
    d.dtod = reinterpret_cast<cu_dtod_t>(dlsym(lib, "cuMemcpyDtoDAsync_v2"));
    d.event_create = create;
    d.memset8 = reinterpret_cast<cu_memset_t>(dlsym(lib, "cuMemsetD8Async"));
    d.stream_sync = reinterpret_cast<cu_stream_sync_t>(dlsym(lib, "cuStreamSynchronize"));
    d.ctx_sync = reinterpret_cast<cu_ctx_sync_t>(dlsym(lib, "cuCtxSynchronize"));
    d.host_register = reinterpret_cast<cu_host_register_t>(dlsym(lib, "cuMemHostRegister_v2"));
    d.host_unregister = reinterpret_cast<cu_host_unregister_t>(dlsym(lib, "cuMemHostUnregister"));
    d.memcpy2d = reinterpret_cast<cu_memcpy2d_t>(dlsym(lib, "cuMemcpy2DAsync_v2"));
    d.set_limit = reinterpret_cast<cu_ctx_set_limit_t>(dlsym(lib, "cuCtxSetLimit"));
    d.reset_persisting_l2 = reinterpret_cast<cu_ctx_reset_l2_t>(dlsym(lib, "cuCtxResetPersistingL2Cache"));
    for (auto [slot, name] : {std::pair{&d.wait_value64, "cuStreamWaitValue64"}, {&d.write_value64, "cuStreamWriteValue64"}}) {
      void *f = dlsym(lib, (std::string(name) + "_v2").c_str());
      *slot = reinterpret_cast<cu_stream_value64_t>(f ? f : dlsym(lib, name));
    }
    if (!create || !d.record || !d.event_sync || !d.elapsed || !d.htod || !d.dtoh || !d.dtod || !d.memset8 || !d.stream_sync ||
        !d.ctx_sync || !d.memcpy2d || !d.set_limit || !d.reset_persisting_l2 || create(&F.ev_start, 0) ||
        create(&F.ev_end, 0) || create(&F.ev_after, 0) || create(&F.ev_armed, 0))
      fail("the timer could not reach the CUDA driver (no current context?)");
    F.stream = reinterpret_cast<void *>(static_cast<intptr_t>(stream_handle));
    F.cuda = true;
    F.backend = pg->getBackend(c10::DeviceType::CUDA);
    F.one = at::Tensor(at::detail::empty_generic({1}, c10::GetAllocator(c10::DeviceType::CUDA),
                                                 c10::DispatchKeySet(c10::DispatchKey::CUDA), at::kFloat,
                                                 std::nullopt));
    F.flush = at::Tensor(at::detail::empty_generic({256 << 20}, c10::GetAllocator(c10::DeviceType::CUDA),
                                                   c10::DispatchKeySet(c10::DispatchKey::CUDA), at::kByte,
                                                   std::nullopt));
    check_cu(d.memset8(reinterpret_cast<uint64_t>(F.one.data_ptr()), 0, 4, F.stream), "alignment buffer");
    // Zero from the start: consume() copies its zeros from here before the first timed call's flush.
    F.flush_ptr = reinterpret_cast<uint64_t>(F.flush.data_ptr());
    d.launch = reinterpret_cast<cu_launch_t>(dlsym(lib, "cuLaunchKernel"));
    if (load_digest_kernel(lib)) {
      F.digest_buf = at::Tensor(at::detail::empty_generic({8}, c10::GetAllocator(c10::DeviceType::CUDA),
                                                          c10::DispatchKeySet(c10::DispatchKey::CUDA), at::kByte,
                                                          std::nullopt));
      F.digest_word = reinterpret_cast<uint64_t>(F.digest_buf.data_ptr());
    }
    F.flush_bytes = F.flush.nbytes();
    check_cu(d.memset8(F.flush_ptr, 0, F.flush_bytes, F.stream), "flush buffer");
    if (!sleep_fn.is_none()) {
      F.sleep_fn = sleep_fn.ptr();
      Py_INCREF(F.sleep_fn);
      if (!PyCFunction_Check(F.sleep_fn) || !(PyCFunction_GET_FLAGS(F.sleep_fn) & METH_O))
        fail("the spin function is not the C function of one argument the engine expects");
      F.sleep_meth = PyCFunction_GET_FUNCTION(F.sleep_fn);
      F.sleep_self = PyCFunction_GET_SELF(F.sleep_fn);
    }
    F.cycles_per_us = cycles_per_us;
  } else {
    F.backend = pg->getBackend(c10::DeviceType::CPU);
  }
  F.backend_vtable = *reinterpret_cast<const void *const *>(F.backend.get());
  F.cpu_allocator = c10::GetAllocator(c10::DeviceType::CPU);
  F.cpu_allocator_vtable = *reinterpret_cast<const void *const *>(F.cpu_allocator);
  if (F.cuda) {
    F.cuda_allocator = c10::GetAllocator(c10::DeviceType::CUDA);
    F.cuda_allocator_vtable = *reinterpret_cast<const void *const *>(F.cuda_allocator);
  }
  for (py::handle t : result_tuples) {
    if (F.n_result_tuples == MAX_RESULT_TUPLES) fail("more result classes than the engine keeps");
    Py_INCREF(t.ptr());  // kept for the process's life
    F.result_tuples[F.n_result_tuples++] = reinterpret_cast<PyTypeObject *>(t.ptr());
  }
  for (auto &name : watched_env) {
    if (F.n_watched == MAX_WATCHED || name.size() >= WATCHED_NAME) fail("a watched variable the engine cannot keep: " + name);
    const char *v = getenv(name.c_str());
    if (v && strlen(v) >= WATCHED_VALUE) fail("the value of " + name + " is longer than the engine keeps");
    Watched &w = F.watched_env[F.n_watched++];
    memcpy(w.name, name.data(), name.size());
    w.set = v != nullptr;
    if (v) memcpy(w.value, v, strlen(v));
  }
  // The interval timers' signals are ignored between calls: a timer the solution left armed finds no handler of its
  // own there (restore_signals) and must not end the rank either.
  for (int sig : {SIGALRM, SIGVTALRM, SIGPROF}) signal(sig, SIG_IGN);
  for (int sig = 1; sig < 65; ++sig) sigaction(sig, nullptr, &F.dispositions[sig]);
  at::addGlobalCallback(at::RecordFunctionCallback(on_op).needsInputs(false).scopes({at::RecordScope::FUNCTION}));
  F.tensor_type = reinterpret_cast<PyTypeObject *>(THPVariableClass);
  F.dispatch_name = PyUnicode_InternFromString("__torch_dispatch__");
  if (!F.dispatch_name) throw py::error_already_set();
  F.tensor_dispatch = _PyType_Lookup(F.tensor_type, F.dispatch_name);
  Py_XINCREF(F.tensor_dispatch);
  find_policy_bits();
  pthread_sigmask(SIG_SETMASK, nullptr, &F.call_mask);
  sigfillset(&F.after_call);
  for (int sig : FAULTS) sigdelset(&F.after_call, sig);
  {
    at::Tensor probe(at::detail::empty_generic({1}, c10::GetAllocator(c10::DeviceType::CPU),
                                               c10::DispatchKeySet(c10::DispatchKey::CPU), at::kByte, std::nullopt));
    F.impl_vtable = *reinterpret_cast<const void *const *>(probe.unsafeGetTensorImpl());
  }
  F.timer_fd = timer_fd;
  F.timer_channel = held_channel(timer_fd);
  unsigned char hello[24] = {'A', 'R', 'N', 'K'};
  memcpy(hello + 8, key, 16);
  if (!write_all(timer_fd, hello, sizeof hello)) fail("the timer could not write its key");
  memset(key, 0, sizeof key);
  F.opened = true;
}

// ---- sealing: the last step before the solution loads ----------------------------------------------------------
// mseal(2), Linux 6.10 and later: the same number on x86_64 and aarch64.
constexpr long MSEAL_NR = 462;

struct SealTally {
  int ranges = 0;
  int unsupported = 0;  // ENOSYS: a kernel older than mseal
  std::string failed;   // the first range the kernel refused, and why
};

void seal_range(uintptr_t start, uintptr_t end, const char *what, SealTally &t) {
  start &= ~(PAGE - 1);
  end = (end + PAGE - 1) & ~(PAGE - 1);
  if (end <= start || t.unsupported || !t.failed.empty()) return;
  if (syscall(MSEAL_NR, start, end - start, 0UL) == 0) {
    ++t.ranges;
    return;
  }
  if (errno == ENOSYS) {
    t.unsupported = 1;
    return;
  }
  t.failed = std::string(what) + ": " + strerror(errno);
}

// Every loaded object's code and read-only data, and its table of library addresses once relocated (RELRO): what the
// engine calls through between the solution's return and its reply (libc's write and clock, the driver's event
// timing) and the code behind it. A hook put there for a moment and taken away before the stop is then impossible.
int seal_object(struct dl_phdr_info *info, size_t, void *data) {
  auto &t = *static_cast<SealTally *>(data);
  const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "the program";
  for (int k = 0; k < info->dlpi_phnum; ++k) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[k];
    uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && !(ph.p_flags & PF_W)) seal_range(start, start + ph.p_memsz, name, t);
    // The loader made the RELRO part read-only up to its last whole page (glibc's _dl_protect_relro).
    if (ph.p_type == PT_GNU_RELRO) seal_range(start, (start + ph.p_memsz) & ~(PAGE - 1), name, t);
  }
  return 0;
}

// The kernel's own mappings in the process: the vDSO's code (dl_iterate_phdr lists it too) and the time data it reads
// ([vvar], [vvar_vclock]), which is no ELF object. Unsealed, a private copy remapped over [vvar] would be the clock the
// sealed vDSO code reads, and the engine's clock the solution's.
void seal_special_mappings(SealTally &t) {
  int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    t.failed = "the process's mappings: /proc/self/maps could not be read";
    return;
  }
  std::string maps;
  char buf[1 << 16];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) maps.append(buf, static_cast<size_t>(n));
  close(fd);
  size_t at = 0;
  while (at < maps.size()) {
    size_t end = maps.find('\n', at);
    if (end == std::string::npos) end = maps.size();
    std::string line = maps.substr(at, end - at);
    at = end + 1;
    for (const char *name : {"[vvar]", "[vvar_vclock]", "[vdso]"}) {
      size_t n = strlen(name);
      if (line.size() < n || line.compare(line.size() - n, n, name) != 0) continue;
      unsigned long lo = 0, hi = 0;
      if (sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2) seal_range(lo, hi, name, t);
    }
  }
}

// The engine's tables read-only and sealed, and every object's code with them: called once, after the rank's set-up
// (open, the report channel, the channel lock) and before the solution's module is imported. Returns whether the
// kernel sealed (False on kernels without mseal, where the tables are read-only only and the host's comparison at
// every stop is what holds them).
bool seal_engine() {
  not_while_serving();
  if (!F.opened) fail("the engine is sealed after it is opened");
  if (engine_sealed) fail("the engine is already sealed");
  engine_sealed = true;
  watch_bound_tables();
  for (auto [p, n] : {std::pair<void *, size_t>{&driver_page, sizeof driver_page},
                      std::pair<void *, size_t>{&fixed_page, sizeof fixed_page}})
    if (mprotect(p, n, PROT_READ) != 0) fail(std::string("the engine's tables could not be made read-only: ") + strerror(errno));
  SealTally t;
  seal_range(reinterpret_cast<uintptr_t>(&driver_page), reinterpret_cast<uintptr_t>(&driver_page) + sizeof driver_page,
             "the driver table", t);
  seal_range(reinterpret_cast<uintptr_t>(&fixed_page), reinterpret_cast<uintptr_t>(&fixed_page) + sizeof fixed_page,
             "the engine's fixed table", t);
  dl_iterate_phdr(seal_object, &t);
  seal_special_mappings(t);
  if (!t.failed.empty()) fail("the kernel refused to seal " + t.failed);
  return !t.unsupported;
}

// ---- the lazily bound libraries' tables of addresses --------------------------------------------------------------
// libc, libstdc++, libpython, libc10 and libtorch are linked for lazy binding: the entries through which they call
// functions of other objects (and torch calls its own exported functions) lie in .got.plt, in pages shared with their
// writable data, which no seal can cover. Between the solution's return and its reply the engine passes through many
// of them (its allocations, torch's accessors), so an entry re-pointed at code of the solution's would run that code
// inside the engine, after the rules' fields are taken and before they are written (a red team blanked the aliasing
// field that way). Every such entry of every object loaded when the engine is watched is kept, with what it held, in
// pages read-only and sealed; right after the solution's calls return, before anything that could go through one,
// each is compared. An entry may change only as the loader binds it: from its own object's lazy stub to code of an
// object loaded by then. Anything else ends the rank (ENGINE_ALTERED_EXIT). Both sides watch, so both pay the same.
struct BoundTable {
  uintptr_t slots;  // the first entry's address
  size_t count;     // entries, side by side
  size_t first;     // where its values (and lazy flags) start in BoundIndex
  char name[96];
};
struct CodeRange {
  uintptr_t lo, hi;
};
struct BoundIndex {
  size_t tables = 0, ranges = 0;
  BoundTable *table = nullptr;
  CodeRange *range = nullptr;
  uint64_t *values = nullptr;
  unsigned char *lazy = nullptr;  // per entry: still the loader's stub when kept (the file's word plus the load base)
  size_t entries = 0;
};
Sealable<BoundIndex> bound_page __asm__("arena_bound") __attribute__((used));
const BoundIndex &B = bound_page.v;

#if defined(__x86_64__)
constexpr uint32_t JUMP_SLOT = 7, IRELATIVE = 37;  // R_X86_64_JUMP_SLOT, R_X86_64_IRELATIVE
#elif defined(__aarch64__)
constexpr uint32_t JUMP_SLOT = 1026, IRELATIVE = 1032;  // R_AARCH64_JUMP_SLOT, R_AARCH64_IRELATIVE
#endif

struct BoundScan {
  std::vector<BoundTable> tables;
  std::vector<CodeRange> ranges;
  std::vector<uint64_t> values;
  std::vector<unsigned char> lazy;
};

// The words the object's file holds for ``count`` entries from ``lo``: before the loader binds an entry, it holds
// the load base plus this word (its lazy stub). False when the file cannot be read.
bool file_words(const char *path, const struct dl_phdr_info *info, uintptr_t lo, size_t count,
                std::vector<uint64_t> &out) {
  uintptr_t vaddr = lo - info->dlpi_addr;
  for (int k = 0; k < info->dlpi_phnum; ++k) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[k];
    if (ph.p_type != PT_LOAD || vaddr < ph.p_vaddr || vaddr + count * sizeof(uint64_t) > ph.p_vaddr + ph.p_filesz)
      continue;
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    out.assign(count, 0);
    size_t want = count * sizeof(uint64_t);
    ssize_t got = pread(fd, out.data(), want, static_cast<off_t>(ph.p_offset + (vaddr - ph.p_vaddr)));
    close(fd);
    return got == static_cast<ssize_t>(want);
  }
  return false;
}

int scan_object(struct dl_phdr_info *info, size_t, void *data) {
  auto &scan = *static_cast<BoundScan *>(data);
  const uintptr_t base = info->dlpi_addr;
  const ElfW(Dyn) *dyn = nullptr;
  uintptr_t relro_lo = 0, relro_hi = 0, code_lo = UINTPTR_MAX, code_hi = 0;
  for (int k = 0; k < info->dlpi_phnum; ++k) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[k];
    if (ph.p_type == PT_DYNAMIC) dyn = reinterpret_cast<const ElfW(Dyn) *>(base + ph.p_vaddr);
    if (ph.p_type == PT_GNU_RELRO) relro_lo = base + ph.p_vaddr, relro_hi = relro_lo + ph.p_memsz;
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
      code_lo = std::min<uintptr_t>(code_lo, base + ph.p_vaddr);
      code_hi = std::max<uintptr_t>(code_hi, base + ph.p_vaddr + ph.p_memsz);
      scan.ranges.push_back({base + ph.p_vaddr, base + ph.p_vaddr + ph.p_memsz});
    }
  }
  if (!dyn || code_hi == 0) return 0;
  uintptr_t jmprel = 0;
  size_t relsz = 0;
  for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_JMPREL) jmprel = d->d_un.d_ptr;
    if (d->d_tag == DT_PLTRELSZ) relsz = d->d_un.d_val;
  }
  if (!jmprel || !relsz) return 0;
  // The loader rewrites some objects' dynamic addresses in place and not others' (the vDSO, read-only sections).
  if (jmprel < base) jmprel += base;
  const auto *rel = reinterpret_cast<const ElfW(Rela) *>(jmprel);
  size_t n = relsz / sizeof(ElfW(Rela));
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (size_t k = 0; k < n; ++k) {
    uint32_t type = static_cast<uint32_t>(ELF64_R_TYPE(rel[k].r_info));
    if (type != JUMP_SLOT && type != IRELATIVE) continue;
    uintptr_t at = base + rel[k].r_offset;
    lo = std::min(lo, at);
    hi = std::max(hi, at + sizeof(uint64_t));
  }
  // Entries inside the object's RELRO part were bound at load (-z now) and are sealed with it.
  if (hi <= lo || (lo >= relro_lo && hi <= relro_hi)) return 0;
  BoundTable t{};
  t.slots = lo;
  t.count = (hi - lo) / sizeof(uint64_t);
  t.first = scan.values.size();
  const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "the program";
  const char *slash = strrchr(name, '/');
  snprintf(t.name, sizeof t.name, "%s", slash ? slash + 1 : name);
  const auto *slot = reinterpret_cast<const uint64_t *>(lo);
  scan.values.insert(scan.values.end(), slot, slot + t.count);
  // Only an entry still at its stub may change, and only as the loader binds it: one already bound (to another
  // object, or to its own object's function, as libtorch's calls of its own exported functions are) is held to what
  // it was. Where the file cannot be read, an entry pointing into its own object's code is taken for a stub.
  std::vector<uint64_t> words;
  bool read = file_words(info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe", info, lo, t.count,
                         words);
  for (size_t e = 0; e < t.count; ++e)
    scan.lazy.push_back(read ? slot[e] == info->dlpi_addr + words[e] : slot[e] >= code_lo && slot[e] < code_hi);
  scan.tables.push_back(t);
  return 0;
}

// Once, in each process that runs steps: the rank's as the last thing before it seals (seal_engine), the judge's once
// its engine is open. Returns the number of entries watched.
size_t watch_bound_tables() {
  not_while_serving();
  if (B.table) fail("the engine already watches the tables of library addresses");
  BoundScan scan;
  dl_iterate_phdr(scan_object, &scan);
  size_t bytes = scan.tables.size() * sizeof(BoundTable) + scan.ranges.size() * sizeof(CodeRange) +
                 scan.values.size() * (sizeof(uint64_t) + 1);
  size_t mapped = (std::max<size_t>(bytes, 1) + PAGE - 1) & ~(PAGE - 1);
  void *at = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (at == MAP_FAILED) fail("the engine could not keep the tables of library addresses");
  auto *p = static_cast<unsigned char *>(at);
  BoundIndex idx;
  idx.tables = scan.tables.size();
  idx.ranges = scan.ranges.size();
  idx.entries = scan.values.size();
  idx.table = reinterpret_cast<BoundTable *>(p);
  memcpy(idx.table, scan.tables.data(), idx.tables * sizeof(BoundTable));
  idx.range = reinterpret_cast<CodeRange *>(p + idx.tables * sizeof(BoundTable));
  memcpy(idx.range, scan.ranges.data(), idx.ranges * sizeof(CodeRange));
  idx.values = reinterpret_cast<uint64_t *>(p + idx.tables * sizeof(BoundTable) + idx.ranges * sizeof(CodeRange));
  memcpy(idx.values, scan.values.data(), idx.entries * sizeof(uint64_t));
  idx.lazy = reinterpret_cast<unsigned char *>(idx.values + idx.entries);
  memcpy(idx.lazy, scan.lazy.data(), idx.entries);
  if (mprotect(&bound_page, sizeof bound_page, PROT_READ | PROT_WRITE) != 0)
    fail(std::string("the engine's index of tables could not be written: ") + strerror(errno));
  bound_page.v = idx;
  SealTally t;
  for (auto [q, n] : {std::pair<void *, size_t>{at, mapped}, std::pair<void *, size_t>{&bound_page, sizeof bound_page}}) {
    if (mprotect(q, n, PROT_READ) != 0)
      fail(std::string("the tables of library addresses could not be made read-only: ") + strerror(errno));
    seal_range(reinterpret_cast<uintptr_t>(q), reinterpret_cast<uintptr_t>(q) + n, "the kept tables", t);
  }
  if (!t.failed.empty()) fail("the kernel refused to seal " + t.failed);
  return idx.entries;
}

bool in_loaded_code(uint64_t v) {
  for (size_t k = 0; k < B.ranges; ++k)
    if (v >= B.range[k].lo && v < B.range[k].hi) return true;
  return false;
}

// Right after the solution's calls return (evaluator/timer/__init__.py ENGINE_ALTERED_EXIT when an entry moved).
void check_bound_tables() {
  for (size_t k = 0; k < B.tables; ++k) {
    const BoundTable &t = B.table[k];
    const uint64_t *live = reinterpret_cast<const uint64_t *>(t.slots);
    const uint64_t *kept = B.values + t.first;
    if (memcmp(live, kept, t.count * sizeof(uint64_t)) == 0) continue;
    for (size_t e = 0; e < t.count; ++e) {
      uint64_t now = live[e];
      if (now == kept[e]) continue;
      bool bound_lazily = B.lazy[t.first + e] && in_loaded_code(now);
      if (bound_lazily) continue;
      char msg[256];
      int n = snprintf(msg, sizeof msg,
                       "an entry of %s's table of library addresses was re-pointed outside the code loaded before the "
                       "solution (entry %zu)\n",
                       t.name, e);
      (void)!write(2, msg, static_cast<size_t>(std::max(0, std::min<int>(n, sizeof msg - 1))));
      _exit(ENGINE_ALTERED_EXIT);
    }
  }
}

void set_spin(double spin_us) {
  not_while_serving();
  S.spin_us = spin_us;
}

// One step from Python (the judge's baseline, tests): returns the figures and what the rules need.
py::dict run_step(bool timed, py::object call, int feed_fd, int out_fd, uint32_t calls,
                  std::pair<uint64_t, uint64_t> key) {
  not_while_serving();
  StepResult r =
      step(timed, call.ptr(), mapping(feed_fd, true), mapping(out_fd, true), calls, MaskKey{key.first, key.second});
  py::dict d;
  d["elapsed_us"] = r.elapsed_us;
  d["launch_us"] = r.launch_us;
  d["nbytes"] = r.nbytes;
  d["devices"] = r.taken.devices;
  d["aliases"] = r.taken.aliases;
  d["subclasses"] = r.taken.refused;
  d["inputs_swapped"] = r.swapped;
  d["signals_changed"] = r.signals;
  d["multicast_changed"] = r.environment;
  d["calls"] = r.calls;  // JSON text
  d["steps_us"] = py::dict(py::arg("measure") = r.measure_us, py::arg("save") = r.save_us,
                           py::arg("calls") = r.calls_us, py::arg("between") = r.between_us);
  d["digest"] = r.digest;
  d["gate_us"] = r.gate_us;
  return d;
}

// Host commands, 40 bytes each: magic, op, i, flags, a double, the key the call's feed frame is masked under.
enum Op : uint32_t { CALL = 1, TIME = 2, SPIN = 3, EXIT = 4 };
struct Command {
  char magic[4];
  uint32_t op, i, flags;
  double arg;
  uint64_t k0, k1;
};
static_assert(sizeof(Command) == 40, "command layout");

void send_line(int fd, const std::string &line) {
  if (fd != F.report_channel.fd) fail("the engine reports only on the channel it holds");
  same_channel(F.report_channel);
  std::string l = line + "\n";
  if (!write_all(fd, l.data(), l.size())) fail("the rank could not report");
}

// The solution's rank from its load to its end. Returns the command (op, i, phase) that raised, for the error
// report, by raising a Python exception whose args end with it; returns None on EXIT or when the host hangs up.
// Called before the solution loads: the report channel as the host opened it.
void hold_report_channel(int report_fd) {
  not_while_serving();
  F.report_channel = held_channel(report_fd);
}

void serve(int cmd_fd, int report_fd, int rank, py::object solution, int feed_fd, int out_fd) {
  not_while_serving();
  serving = true;
  struct Done {
    ~Done() { serving = false; }  // on the host's exit, or on the error that ends the rank
  } done;
  Mapping &feed = mapping(feed_fd, true);
  Mapping &out = mapping(out_fd, true);
  std::string prefix = "\"rank\": " + std::to_string(rank) + ", ";
  for (;;) {
    Command c;
    bool got;
    // The GIL is kept while the rank waits: no Python thread runs between its reply and its next window, whenever
    // it started (a Python callback on a future, run by a thread of the runtime's that existed before the solution
    // loaded, ran after the reply here). Python that waits for it runs in the next window, on the clock.
    {
      char *p = reinterpret_cast<char *>(&c);
      size_t n = sizeof c;
      got = true;
      while (n) {
        long r = arena_read_command(cmd_fd, p, n);  // here, in serve(): the call the host expects to return into
        if (r == -EINTR) continue;  // a handler the code under test set runs at its next bytecode: timed
        if (r < 0) fail("the command channel could not be read: " + std::string(strerror(static_cast<int>(-r))));
        if (r == 0) {  // the host hung up
          got = false;
          break;
        }
        p += r;
        n -= static_cast<size_t>(r);
      }
    }
    if (!got || memcmp(c.magic, "ARNC", 4) != 0 || c.op == EXIT) {
      release_held();
      return;
    }
    if (c.op == SPIN) {
      S.spin_us = c.arg;
      send_line(report_fd, "{\"kind\": \"spun\", " + prefix.substr(0, prefix.size() - 2) + "}");
      continue;
    }
    if (c.op != CALL && c.op != TIME) fail("an unknown command from the host");
    bool timed = c.op == TIME;
    S.last_op = c.op;
    S.last_i = c.i;
    S.last_flags = c.flags;
    // A timed command's number is how many calls its window holds (evaluator/host/batch.py); else one call.
    uint32_t calls = 1;
    if (timed) {
      if (!(c.arg >= 1 && c.arg <= MAX_BATCH) || c.arg != static_cast<double>(static_cast<uint32_t>(c.arg)))
        fail("a timed command for a number of calls the engine does not take");
      calls = static_cast<uint32_t>(c.arg);
    }
    StepResult r = step(timed, solution.ptr(), feed, out, calls, MaskKey{c.k0, c.k1});
    std::string line;
    if (timed) {
      line = "{\"kind\": \"timed\", " + prefix + "\"i\": " + std::to_string(c.i) + ", \"launch_us\": " +
             json_num(r.launch_us) + ", \"nbytes\": " + ((c.flags & 1) ? std::to_string(r.nbytes) : "null") +
             ", \"digest\": " + std::to_string(r.digest) + ", \"gate_us\": " + json_num(r.gate_us) +
             ", \"steps_us\": {\"measure\": " + json_num(r.measure_us) + ", \"save\": " + json_num(r.save_us) +
             ", \"calls\": " + json_num(r.calls_us) + ", \"between\": " + json_num(r.between_us) + "}, " +
             step_report(r) + "}";
    } else {
      std::string name = (c.flags & 1) ? "t" + std::to_string(c.i) : "warm";
      line = "{\"kind\": \"called\", " + prefix + "\"name\": " + json_str(name) + ", \"phase\": " +
             json_str((c.flags & 1) ? "correctness" : "setup") + ", \"nbytes\": " + std::to_string(r.nbytes) +
             ", \"digest\": " + std::to_string(r.digest) + ", " +
             step_report(r) + "}";
    }
    send_line(report_fd, line);
  }
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "The evaluator's compiled per-call path (evaluator/timer/_engine.cpp).";
  m.def("open", &open_engine, "Draw the key and send it, reach CUDA, bind the backend; once per process.",
        py::arg("timer_fd"), py::arg("stream"), py::arg("device_index"), py::arg("group"), py::arg("sleep"),
        py::arg("cycles_per_us"), py::arg("result_tuples"), py::arg("watched_env"));
  m.def("set_spin", &set_spin);
  m.def("make_device_feed", &make_device_feed, py::arg("nbytes"), py::arg("exported"), py::arg("outputs") = false,
        "GPU hosts, the judge: device memory for a rank's inputs (or outputs) and a byte tensor over it; exported, "
        "with a descriptor for the solution's rank (else this engine's own). Before seal().");
  m.def("gate", &gate, py::arg("feed"), py::arg("source"), py::arg("start"), py::arg("end"), py::arg("token"),
        py::arg("spin"), py::arg("release"), py::arg("solution"),
        "GPU hosts, the judge: queue the gate of one call's inputs in the gate context: wait for the call's stream to "
        "reach it, spin when ``spin``, copy the source's bytes [start, end) into the device feed, release.");
  m.def("make_gate_source", &make_gate_source, py::arg("nbytes"),
        "GPU hosts, the judge: device memory to lay a call's frame out in for the gates to copy from.");
  m.def("make_gate", &make_gate, py::arg("exported"),
        "GPU hosts, the judge: a gate's release page; exported, a sealed descriptor of it for the solution's rank and "
        "the device address to release through (else this engine's own). Before seal().");
  m.def("open_gate", &open_gate, py::arg("fd"),
        "GPU hosts, the solution's rank: the judge's release page for this rank's gate, read-only. Before seal().");
  m.def("open_device_feed", &open_device_feed, py::arg("fd"), py::arg("nbytes"), py::arg("outputs") = false,
        "GPU hosts, the solution's rank: map the judge's device feed for this rank (inputs, or outputs) by its "
        "descriptor. Before seal().");
  m.def(
      "device_digest",
      [](py::buffer head, const at::Tensor &data) {
        not_while_serving();
        py::buffer_info info = head.request();
        if (!data.is_cuda() || data.scalar_type() != at::kByte || !data.is_contiguous())
          fail("a device frame's data is a contiguous byte tensor on the GPU");
        return device_frame_digest(info.ptr, static_cast<size_t>(info.size) * static_cast<size_t>(info.itemsize),
                                   reinterpret_cast<uint64_t>(data.data_ptr()), static_cast<size_t>(data.nbytes()));
      },
      py::arg("head"), py::arg("data"),
      "The digest the engine takes of a frame whose head is ``head`` and whose data is ``data`` (device memory).");
  m.def("seal", &seal_engine,
        "Make the engine's tables read-only and seal them, with every loaded object's code and relocated tables; "
        "once, before the solution loads. False where the kernel has no mseal.");
  m.def("watch_bound_tables", &watch_bound_tables,
        "Keep every lazily bound entry of the loaded objects' tables of library addresses, sealed, and compare them "
        "after every call; once. Returns the entries kept.");
  m.def("step", &run_step, py::arg("timed"), py::arg("call"), py::arg("feed_fd"), py::arg("out_fd"),
        py::arg("calls") = 1, py::kw_only(), py::arg("key"),
        "One step from Python (the judge's baseline): ``key`` is what its feed frame was masked under (mask_frame).");
  m.def(
      "mask_stream",
      [](size_t at, size_t n, std::pair<uint64_t, uint64_t> key) {
        std::string zeros(n, '\0');
        unsigned char *p = reinterpret_cast<unsigned char *>(zeros.data());
        apply_mask(p, p, at, n, MaskKey{key.first, key.second});
        return py::make_tuple(py::bytes(zeros), MASK_WITH_AES ? "aes-128-ctr" : "siphash");
      },
      py::arg("at"), py::arg("n"), py::arg("key"),
      "The mask's bytes at slot offsets [at, at + n) under ``key``, and which keystream this host uses.");
  m.def("mask_frame", &mask_frame, py::arg("frame"), py::arg("key"),
        "The judge: a feed frame (a writable buffer of its bytes from the slot's start) masked in place under "
        "``key`` (two 64-bit words), every input's data, as the engine unmasks it; a gated frame is left alone.");
  m.def("hold_report_channel", &hold_report_channel, py::arg("report_fd"));
  m.def("lock_channels", &lock_channels, py::arg("fds"), py::arg("command_fd") = -1,
        "Refuse this process, every thread and child, any re-pointing of these descriptors, report and timer "
        "included, and any read of the command channel but the engine's own.");
  m.def(
      "digest",
      [](py::buffer b) {
        not_while_serving();
        py::buffer_info info = b.request();
        size_t n = static_cast<size_t>(info.size) * static_cast<size_t>(info.itemsize);
        py::gil_scoped_release nogil;
        return static_cast<int64_t>(crc32c(info.ptr, n));
      },
      py::arg("data"));
  m.def("serve", &serve, py::arg("cmd_fd"), py::arg("report_fd"), py::arg("rank"), py::arg("solution"),
        py::arg("feed_fd"), py::arg("out_fd"));
  m.def("current", []() {
        not_while_serving();
        return py::make_tuple(S.last_op, S.last_i, S.last_flags);
      },
        "The command serve() was running: (op, i, flags).");
  m.def(
      "release",
      []() {
        not_while_serving();
        release_held();
      },
      "Drops what the last step kept (at the end of an evaluation).");
}
