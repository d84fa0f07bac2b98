# aggregator/aggregator.mk - mlf-aggregator, an application of the fabric (include/mlfabric/mlfabric.h).
INC_aggregator := $(INC_MLFABRIC)
PROGRAMS += $(BUILD)/mlf-aggregator

$(BUILD)/mlf-aggregator: $(BUILD)/aggregator/mlf_aggregator.o $(MLFABRIC_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS) -lpthread
