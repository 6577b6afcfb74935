.PHONY: run test install
# Install everything and start the product on http://127.0.0.1:8000.
run:
	scripts/run.sh
# Run the test suite (CPU; GPU tests skip when there is no GPU).
test:
	scripts/test.sh
install:
	scripts/install.sh
