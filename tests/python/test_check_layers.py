"""Unit tests of tools/check-layers: it flags an include from a layer above, a forbidden system
header in the pure planner, a header the example may not include (examples/c sees only the
installed ones), a file-level circle of calls found in real objects (gcc + nm), and a
scheduler core file that names a synchronization policy; it accepts one-way calls and the
policy words inside the policy files."""
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "tools", "check-layers")


def load_tool():
    loader = importlib.machinery.SourceFileLoader("check_layers", TOOL)
    spec = importlib.util.spec_from_loader("check_layers", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


CL = load_tool()


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


class Includes(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="mlf-layers-")
        write(self.root, "lib/base/log.h", "/* log */\n")
        write(self.root, "scheduler/daemon/sched_state.h", "/* daemon state */\n")
        write(self.root, "scheduler/planner/plan.h", '#include "log.h"\n')

    def tearDown(self):
        shutil.rmtree(self.root)

    def test_clean_tree_passes(self):
        write(self.root, "scheduler/planner/plan.c", '#include "plan.h"\n#include "log.h"\n#include <string.h>\n')
        write(self.root, "scheduler/daemon/sched_batch.c", '#include "sched_state.h"\n#include "plan.h"\n')
        self.assertEqual(CL.check_includes(self.root), [])

    def test_include_from_a_layer_above_is_named(self):
        write(self.root, "scheduler/planner/plan.c", '#include "sched_state.h"\n')
        bad = CL.check_includes(self.root)
        self.assertEqual(len(bad), 1)
        self.assertIn("scheduler/planner/plan.c", bad[0])
        self.assertIn('"sched_state.h" from scheduler/daemon', bad[0])

    def test_jansson_in_the_planner_is_refused(self):
        write(self.root, "scheduler/planner/plan.c", "#include <jansson.h>\n")
        bad = CL.check_includes(self.root)
        self.assertEqual(len(bad), 1)
        self.assertIn("<jansson.h>", bad[0])

    def test_example_includes_only_installed_headers(self):
        """examples/c may include the installed headers (include/mlfabric/) and system headers, with
        "..." or <...>; the protocol header mlf_payload.h is not installed, so it is named."""
        write(self.root, "include/mlfabric/mlfabric.h", "/* API */\n")
        write(self.root, "lib/proto/mlf_payload.h", "/* wire header */\n")
        write(self.root, "examples/c/push_get.c", '#include <mlfabric/mlfabric.h>\n#include <stdio.h>\n')
        self.assertEqual(CL.check_includes(self.root), [])
        write(self.root, "examples/c/push_get.c", '#include <mlfabric/mlfabric.h>\n#include <mlf_payload.h>\n')
        bad = CL.check_includes(self.root)
        self.assertEqual(len(bad), 1)
        self.assertIn('examples/c/push_get.c: includes "mlf_payload.h" from lib/proto', bad[0])


class PolicyWords(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="mlf-policy-")
        write(self.root, "scheduler/daemon/sched_batch.c",
              "/* sched_batch.c - batches (an aspect of planning, not a policy) */\n"
              "int tick(void) { return sched_policy_pull_ready(0, 0); }\n")
        write(self.root, "scheduler/daemon/sched_policy_ssp.c", "/* SSP and ASP */ int ssp_s;\n")
        write(self.root, "scheduler/daemon/sched_esync.c", "int esync_query(void);\n")
        write(self.root, "scheduler/daemon/mlf_scheduler.c", '"--adsp GAMMA"\n')

    def tearDown(self):
        shutil.rmtree(self.root)

    def run_tool(self):
        return subprocess.run([sys.executable, TOOL, "--root", self.root, "--no-calls"],
                              capture_output=True, text=True)

    def test_clean_core_passes(self):
        self.assertEqual(CL.check_policy_words(self.root), [])
        self.assertEqual(self.run_tool().returncode, 0)

    def test_planted_policy_branch_is_named_with_file_and_line(self):
        write(self.root, "scheduler/daemon/sched_msg.c",
              "/* sched_msg.c - messages */\n"
              "void on_update(struct sched *s) {\n"
              "\tif (s->cfg.ssp_s >= 0) /* the SSP gate */\n"
              "\t\tsched_adsp_joined(s);\n"
              "}\n"
              "/* ESync's State Server */\n")
        bad = CL.check_policy_words(self.root)
        self.assertEqual(len(bad), 3)
        self.assertIn("scheduler/daemon/sched_msg.c:3:", bad[0])
        self.assertIn("ssp", bad[0])
        self.assertIn("scheduler/daemon/sched_msg.c:4:", bad[1])
        self.assertIn("adsp", bad[1])
        self.assertIn("scheduler/daemon/sched_msg.c:6:", bad[2])
        self.assertIn("esync", bad[2])
        r = self.run_tool()
        self.assertEqual(r.returncode, 1)
        self.assertIn("scheduler/daemon/sched_msg.c:3:", r.stdout)


@unittest.skipUnless(shutil.which("gcc") and shutil.which("nm"), "needs gcc and nm")
class Calls(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="mlf-calls-")
        self.build = os.path.join(self.root, "build")
        self.saved = CL.CALL_COMPONENTS
        CL.CALL_COMPONENTS = ["scheduler"]

    def tearDown(self):
        CL.CALL_COMPONENTS = self.saved
        shutil.rmtree(self.root)

    def compile(self, rel, text):
        write(self.root, rel, text)
        obj = os.path.join(self.build, rel[:-2] + ".o")
        os.makedirs(os.path.dirname(obj), exist_ok=True)
        subprocess.run(["gcc", "-c", "-o", obj, os.path.join(self.root, rel)], check=True)

    def test_circle_between_two_files_is_found(self):
        self.compile("scheduler/daemon/a.c", "int b_f(void); int a_f(void) { return b_f(); }\n")
        self.compile("scheduler/daemon/b.c", "int a_f(void); int b_f(void) { return 1; }\n"
                     "int b_g(void) { return a_f(); }\n")
        bad = CL.check_calls(self.root, self.build)
        self.assertEqual(len(bad), 1)
        self.assertIn("circle of calls in scheduler/", bad[0])
        self.assertIn("a.o -> scheduler/daemon/b.o (b_f)", bad[0])

    def test_one_way_calls_pass_and_stale_objects_are_ignored(self):
        self.compile("scheduler/daemon/a.c", "int b_f(void); int a_f(void) { return b_f(); }\n")
        self.compile("scheduler/daemon/b.c", "int old_f(void); int b_f(void) { return old_f(); }\n")
        # an object whose source was moved away must not count (counted, it closes a -> b -> old -> a)
        self.compile("scheduler/daemon/old.c", "int a_f(void); int b_f(void);\n"
                     "int old_f(void) { return a_f(); }\n")
        os.remove(os.path.join(self.root, "scheduler/daemon/old.c"))
        self.compile("scheduler/daemon/c.c", "int b_f(void); int c_f(void) { return b_f(); }\n")
        self.assertEqual(CL.check_calls(self.root, self.build), [])


if __name__ == "__main__":
    unittest.main()
