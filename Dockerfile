# The web and CPU-worker image: the portal under gunicorn, or a worker when given another command. The web worker
# (the database, SECRET_KEY, ARENA_WORKER_KEYS) and the reaper:
#   docker run --env-file portal.env IMAGE python manage.py rqworker web --with-scheduler
#   docker run --env-file portal.env IMAGE python manage.py reap --every 60
# An evaluation or check worker gets Redis and its own key only, never the portal's environment (README, "Deploy").
# It runs solutions and proposals in bubblewrap, which drops to its own uids and makes namespaces: so it runs as root
# in the container, with the namespaces Docker's default seccomp and AppArmor profiles refuse allowed (without them
# every evaluation ends as infra_error, saying bubblewrap cannot start):
#   docker run --user root --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
#     -e REDIS_URL=redis://cpu-hosts:PASSWORD@redis:6379/0 -e ARENA_WORKER_KEY=... -e ARENA_WORKER_KEY_ID=cpu \
#     IMAGE sh -c 'exec rq worker --worker-class evaluator.host.worker.ArenaWorker \
#       --serializer rq.serializers.JSONSerializer --url "$REDIS_URL" --path /app cpu-gloo-2-test cpu-gloo-2'
# (checks: queue `checks`, its own key and Redis user). GPU hosts do not use this image: they run the evaluator under
# their own CUDA PyTorch (see README).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# bubblewrap: the evaluation and check sandboxes; gcc, g++, ninja: the compiled engine and solutions' extensions
RUN apt-get update && apt-get install -y --no-install-recommends gcc g++ ninja-build libpq5 bubblewrap \
    && rm -rf /var/lib/apt/lists/*

# ThunderKittens' headers at the commit pinned in evaluator/contract/backends.py, for ParallelKittens solutions on
# workers built from this image (docs/backends/parallelkittens.md); never part of the repository.
ARG THUNDERKITTENS_COMMIT=0b55588d2769dde0c7a9a606ffc015b0ca7a9551
ADD https://github.com/HazyResearch/ThunderKittens/archive/${THUNDERKITTENS_COMMIT}.tar.gz /tmp/thunderkittens.tar.gz
RUN mkdir -p /opt/thunderkittens && tar -xzf /tmp/thunderkittens.tar.gz -C /opt/thunderkittens --strip-components=1 \
    && rm /tmp/thunderkittens.tar.gz && chmod -R a+rX /opt/thunderkittens
ENV ARENA_THUNDERKITTENS=/opt/thunderkittens

WORKDIR /app
COPY requirements.txt pyproject.toml ./
# PyTorch's CPU build: the portal and the CPU profiles need no CUDA.
RUN pip install --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt

COPY . .
RUN pip install --no-deps --no-build-isolation -e . \
    && SECRET_KEY=build-only-collectstatic DEBUG=0 python manage.py vendor_static \
    && SECRET_KEY=build-only-collectstatic DEBUG=0 python manage.py collectstatic --noinput

RUN useradd --create-home --uid 10001 arena && mkdir -p /app/var && chown -R arena /app/var
USER arena

EXPOSE 8000
CMD ["sh", "-c", "python manage.py migrate --noinput && python manage.py load_problems && gunicorn portal.wsgi:application --bind 0.0.0.0:8000 --workers ${GUNICORN_WORKERS:-4} --access-logfile -"]
