# bench/torch.mk - the PyTorch example over the fabric (docs/torch-example.md): `make bench-torch`
# (time to 0.85 of examples/torch_fashion_mnist.py with MLfabric-A, Async and torch.distributed
# gloo in C2-N1, seeds 1..3, and the Python layer's cost per push+get against C; the table goes
# into docs/results/torch.md "PyTorch over the fabric"), its integration test and the C timing program.
INC_bench += -Iinclude/mlfabric

$(BUILD)/bench-torch-pushget: $(BUILD)/bench/torch_pushget.o $(MLFABRIC_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS) -lpthread

PROGRAMS += $(BUILD)/bench-torch-pushget
INTEG_TESTS += tests/integration/torch_train.sh
BENCHES += bench-torch
.PHONY: bench-torch
bench-torch: programs
	bench/torch_bench.sh
