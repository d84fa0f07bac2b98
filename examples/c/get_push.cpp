// get_push.cpp - libmlfabric from C++17 (<mlfabric/mlfabric.h> and the other public headers
// compile as C++; extern "C" linkage), built out of the tree against the installed library with
// pkg-config only (see Makefile here; docs/api.md "Linking").
//
// It opens an endpoint on this host's dataplane, registers as a worker of SERVER, gets the
// server's model (N floats) and pushes one update of N zeros computed from it (the model does
// not change, its version advances by one). Output, one line each:
//   got version=V n=N w0=X
//   pushed id=ID n=N
// Exit 0 on success, 1 on a fabric error (the library's one-line reason on stderr, e.g. no
// dataplane listening on the socket), 2 on a usage error.
//
//   get_push --cluster conf/cluster.json --host w0 --server ps [--n 1000] [--mode async]
//            [--sock PATH] [--timeout S]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <mlfabric/mlfabric.h>
#include <mlfabric/mlfabric_sync.h>
#include <mlfabric/mlfabric_verify.h>

namespace {

struct closer {
	void operator()(mlf_t *f) const { mlf_close(f); }
};
using endpoint = std::unique_ptr<mlf_t, closer>;

int usage(std::FILE *out, int status)
{
	std::fputs("usage: get_push --cluster FILE --host HOST --server HOST [--n N] [--mode M]\n"
		   "                [--sock PATH] [--timeout S]\n"
		   "  Registers as a worker of the server, gets its model of N floats (default 1000)\n"
		   "  and pushes one update of N zeros. M: mlfabric-a (default) or async.\n", out);
	return status;
}

} // namespace

int main(int argc, char **argv)
{
	mlf_opts o{};
	o.mode = MLF_MODE_MLFABRIC_A;
	o.timeout_s = 10;
	const char *server = nullptr;
	unsigned long n = 1000;

	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--help" || a == "-h")
			return usage(stdout, 0);
		if (i + 1 >= argc)
			return usage(stderr, 2);
		const char *v = argv[++i];
		char *end = nullptr;
		if (a == "--cluster")
			o.cluster = v;
		else if (a == "--host")
			o.host = v;
		else if (a == "--server")
			server = v;
		else if (a == "--sock")
			o.sock = v;
		else if (a == "--n" && (n = std::strtoul(v, &end, 10)) > 0 && !*end)
			continue;
		else if (a == "--timeout" && (o.timeout_s = std::strtod(v, &end)) > 0 && !*end)
			continue;
		else if (a == "--mode" && mlf_mode_parse(v, &o.mode) == 0 && o.mode != MLF_MODE_MLFABRIC_S)
			continue;
		else {
			std::fprintf(stderr, "get_push: %s %s: not understood (--help)\n", a.c_str(), v);
			return 2;
		}
	}
	if (!o.cluster || !o.host || !server) {
		std::fprintf(stderr, "get_push: --cluster, --host and --server are required (--help)\n");
		return 2;
	}

	char err[256];
	endpoint f(mlf_open(&o, err, sizeof(err)));
	if (!f) {
		std::fprintf(stderr, "get_push: %s\n", err);
		return 1;
	}
	if (mlf_register_as_worker(f.get(), server) < 0) {
		std::fprintf(stderr, "get_push: register as worker of %s: %s\n", server, mlf_error(f.get()));
		return 1;
	}
	std::vector<float> w(n), u(n, 0.0f);
	int64_t version = -1;
	if (mlf_get(f.get(), server, w.data(), w.size(), &version, o.timeout_s) < 0) {
		std::fprintf(stderr, "get_push: get: %s\n", mlf_error(f.get()));
		return 1;
	}
	std::printf("got version=%lld n=%zu w0=%g\n", static_cast<long long>(version), w.size(),
		    static_cast<double>(w[0]));
	int64_t id = mlf_push(f.get(), server, u.data(), u.size(), 0.0, version);
	if (id < 0) {
		std::fprintf(stderr, "get_push: push: %s\n", mlf_error(f.get()));
		return 1;
	}
	std::printf("pushed id=%lld n=%zu\n", static_cast<long long>(id), u.size());
	return 0;
}
