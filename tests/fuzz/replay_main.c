/* replay_main.c - the main of a fuzz harness built without libFuzzer (docs/fuzzing.md): runs
 * LLVMFuzzerTestOneInput once on each file given (a directory: on each file in it), so the seed
 * corpora and the inputs fuzzing once found run in `make unit-test` under the normal compiler
 * and in `make sanitize` under ASan+UBSan. Exit 0 when every input ran, 1 when one could not be read. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0, r;

	if (!f)
		return fprintf(stderr, "replay: cannot read %s\n", path), 1;
	do {
		if (n == cap && !(buf = realloc(buf, cap = cap ? 2 * cap : 65536)))
			return fclose(f), fprintf(stderr, "replay: out of memory\n"), 1;
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r > 0);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int bad = 0, runs = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			DIR *d = opendir(argv[i]);
			struct dirent *e;
			while (d && (e = readdir(d))) {
				char p[4096];
				if (e->d_name[0] == '.')
					continue;
				snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
				bad |= run_file(p);
				runs++;
			}
			if (d)
				closedir(d);
		} else {
			bad |= run_file(argv[i]);
			runs++;
		}
	}
	printf("replay %s: %d inputs\n", argc > 0 ? argv[0] : "?", runs);
	return bad;
}
