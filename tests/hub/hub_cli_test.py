"""CLI tests of `df11 pull`, `push`, `publish` and Hub ids, against the strict local Hub
(hub_server.py) on 127.0.0.1, with the real huggingface_hub client for interop. No network.

Run by ctest: python3 hub_cli_test.py --df11 BIN --mkmodel BIN. Skips (exit 77) only when
huggingface_hub is missing and CI is not set; under CI a missing package fails.
"""

import argparse
import filecmp
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ["HF_HUB_DISABLE_XET"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
# Every request goes to the local Hub: offline mode in the caller's environment (an air-gapped
# machine's HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE) must not refuse them. The offline tests
# set HF_HUB_OFFLINE for their own commands.
os.environ.pop("HF_HUB_OFFLINE", None)
os.environ.pop("TRANSFORMERS_OFFLINE", None)
from hub_server import LocalHub  # noqa: E402

TOKEN = "hf_df11TestTokenDoNotPrint0123456789"
ARGS = None


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def sha256_file(path):
    return hashlib.sha256(read(path, "rb")).hexdigest()


def tree_files(root):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".cache"]
        for f in filenames:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = p
    return out


def same_tree(test, a, b, ignore=()):
    fa = {k: v for k, v in tree_files(a).items() if k not in ignore}
    fb = {k: v for k, v in tree_files(b).items() if k not in ignore}
    test.assertEqual(sorted(fa), sorted(fb))
    for k in fa:
        test.assertTrue(filecmp.cmp(fa[k], fb[k], shallow=False), f"{k} differs")


class HubTestBase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="df11-hub-test-")
        cls.hub = LocalHub(os.path.join(cls.tmp, "server"), token=TOKEN, lfs_threshold=64 << 10,
                           multipart_threshold=256 << 10, chunk_size=128 << 10)
        cls.model = os.path.join(cls.tmp, "bf16")
        subprocess.run([ARGS.mkmodel, cls.model, "--layers", "2", "--hidden", "256",
                        "--intermediate", "512", "--vocab", "2000", "--shard-size", "1MB",
                        "--seed", "3"], check=True, capture_output=True)
        cls.df11_dir = os.path.join(cls.tmp, "df11")
        subprocess.run([ARGS.df11, "compress", cls.model, "-o", cls.df11_dir, "-q"], check=True)
        cls.counter = 0

    @classmethod
    def tearDownClass(cls):
        cls.hub.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        type(self).counter += 1
        self.home = os.path.join(self.tmp, f"home{self.counter}")
        os.makedirs(self.home)
        self.hub.state.clear_faults()
        self.hub.state.violations.clear()

    def tearDown(self):
        self.assertEqual(self.hub.state.violations, [])

    def env(self, home=None, **extra):
        e = dict(os.environ)
        e.update({"HF_ENDPOINT": self.hub.url, "HF_TOKEN": TOKEN, "HF_HOME": home or self.home})
        e.pop("HF_HUB_CACHE", None)
        e.update(extra)
        return e

    def df11(self, *args, expect=0, home=None, env=None):
        r = subprocess.run([ARGS.df11, *args], capture_output=True, text=True,
                           env=env or self.env(home), timeout=120)
        # The token never appears in any output.
        self.assertNotIn(TOKEN, r.stdout)
        self.assertNotIn(TOKEN, r.stderr)
        if expect is not None:
            self.assertEqual(r.returncode, expect, f"df11 {args}: {r.stdout}\n{r.stderr}")
        return r

    def hf_api(self, home=None):
        # huggingface_hub reads its constants at import time: pass everything explicitly.
        import huggingface_hub
        return huggingface_hub.HfApi(endpoint=self.hub.url, token=TOKEN)

    def upload_bf16(self, repo):
        api = self.hf_api()
        api.create_repo(repo)
        api.upload_folder(repo_id=repo, folder_path=self.model)

    def snapshot_download(self, repo, home, **kw):
        import huggingface_hub
        return huggingface_hub.snapshot_download(repo, cache_dir=os.path.join(home, "hub"),
                                                 endpoint=self.hub.url, token=TOKEN, **kw)

    def cache_leftovers(self, home):
        """Files in the cache that a failed run must not leave: partial blobs."""
        out = []
        for dirpath, _, filenames in os.walk(os.path.join(home, "hub")):
            out += [os.path.join(dirpath, f) for f in filenames if f.endswith(".incomplete")]
        return out

    def assertFired(self, kind, match, times):
        """The fault added as (kind, match) was sent `times` times: the test exercised it."""
        self.assertEqual(self.hub.state.fired_count(kind, match), times,
                         f"fault {kind} on {match!r}: {self.hub.state.fired}")

    def downloads(self, since):
        return [r for r in self.hub.state.log[since:] if r[1] == "GET" and
                ("/resolve/" in r[2] or r[2].startswith("/cdn/"))]


class PullTests(HubTestBase):
    def test_pull_fetches_what_upload_folder_uploaded_byte_for_byte(self):
        self.upload_bf16("org/pull-basic")
        r = self.df11("pull", "org/pull-basic")
        snapshot = r.stdout.strip()
        same_tree(self, self.model, snapshot, ignore={".gitattributes"})
        storage = os.path.join(self.home, "hub", "models--org--pull-basic")
        commit = read(os.path.join(storage, "refs", "main"))
        self.assertEqual(snapshot, os.path.join(storage, "snapshots", commit))
        # LFS files are stored under their SHA-256, linked from the snapshot.
        for name in os.listdir(self.model):
            if name.endswith(".safetensors"):
                link = os.path.join(snapshot, name)
                self.assertTrue(os.path.islink(link))
                sha = sha256_file(os.path.join(self.model, name))
                self.assertEqual(os.readlink(link), "../../blobs/" + sha)
        # huggingface_hub finds the same snapshot offline.
        self.assertEqual(self.snapshot_download("org/pull-basic", self.home, local_files_only=True),
                         snapshot)
        # The CDN never saw the token; the Hub did.
        for host, _, path, headers in self.hub.state.log:
            if host == "cdn":
                self.assertNotIn("Authorization", headers)

    def test_pull_after_snapshot_download_downloads_nothing(self):
        self.upload_bf16("org/pull-cached")
        path = self.snapshot_download("org/pull-cached", self.home)
        mark = len(self.hub.state.log)
        r = self.df11("pull", "org/pull-cached", "--json")
        result = json.loads(r.stdout)
        self.assertEqual((result["command"], result["ok"]), ("pull", True))
        self.assertEqual(result["path"], path)
        self.assertEqual(result["files_downloaded"], 0)
        self.assertEqual(result["bytes_downloaded"], 0)
        self.assertEqual(self.downloads(mark), [])
        # And a second df11 pull after a df11 pull: nothing either.
        r = self.df11("pull", "org/pull-cached", "--json")
        self.assertEqual(json.loads(r.stdout)["files_reused"], result["files"])

    def test_pull_local_dir_and_include(self):
        self.upload_bf16("org/pull-local")
        out = os.path.join(self.home, "local")
        self.df11("pull", "org/pull-local", "--local-dir", out)
        same_tree(self, self.model, out, ignore={".gitattributes"})
        meta = os.path.join(out, ".cache", "huggingface", "download", "config.json.metadata")
        lines = read(meta).splitlines()
        self.assertEqual(len(lines[0]), 40)
        # huggingface_hub accepts the records: nothing is downloaded again.
        mark = len(self.hub.state.log)
        import huggingface_hub
        huggingface_hub.snapshot_download("org/pull-local", local_dir=out, endpoint=self.hub.url,
                                          token=TOKEN)
        self.assertEqual(self.downloads(mark), [])
        only = os.path.join(self.home, "only")
        self.df11("pull", "org/pull-local", "--local-dir", only, "--include", "*.json")
        self.assertTrue(all(n.endswith(".json") for n in tree_files(only)))
        r = self.df11("pull", "org/pull-local", "--include", "*.nothing", expect=3)
        self.assertIn("no file matches", r.stderr)

    def test_errors_are_clear(self):
        r = self.df11("pull", "org/does-not-exist", expect=3)
        self.assertIn("RepoNotFound", r.stderr)
        r = self.df11("pull", "not a repo", expect=2)
        self.assertIn("not a Hub repo id", r.stderr)
        r = self.df11("pull", "org/x", expect=2, env=self.env(HF_ENDPOINT="http://example.com"))
        self.assertIn("loopback", r.stderr)
        self.upload_bf16("org/pull-rev")
        r = self.df11("pull", "org/pull-rev@nobranch", expect=3)
        self.assertIn("RevisionNotFound", r.stderr)
        r = self.df11("push", self.df11_dir, "org/pull-rev", expect=2,
                      env=self.env(HF_TOKEN="wrong-token"))
        self.assertIn("token", r.stderr)


class FaultTests(HubTestBase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.repo = "org/faults"
        api = cls.hf_api(cls)
        api.create_repo(cls.repo)
        api.upload_folder(repo_id=cls.repo, folder_path=cls.model)
        cls.big = max((n for n in os.listdir(cls.model) if n.endswith(".safetensors")),
                      key=lambda n: os.path.getsize(os.path.join(cls.model, n)))
        cls.big_sha = sha256_file(os.path.join(cls.model, cls.big))

    def pull_ok(self):
        r = self.df11("pull", self.repo)
        same_tree(self, self.model, r.stdout.strip(), ignore={".gitattributes"})
        self.assertEqual(self.cache_leftovers(self.home), [])

    def test_429_with_retry_after_is_retried(self):
        self.hub.state.add_fault("429", "HEAD /org/faults/resolve/", times=2)
        self.pull_ok()
        self.assertFired("429", "HEAD /org/faults/resolve/", 2)
        # Retry-After: 1 was honoured: each refused request came again at least 1 s after its
        # 429 (the files are fetched side by side, so the two 429s may come together). A lower
        # bound only: a slow machine waits longer, never shorter.
        state = self.hub.state
        for kind, _, what, refused_at in state.fired:
            method, path = what.split(" ", 1)
            again = [t for (_, m, p, _), t in zip(state.log, state.log_times)
                     if (m, p) == (method, path) and t > refused_at]
            self.assertTrue(again, f"{what} was not retried")
            self.assertGreaterEqual(again[0] - refused_at, 0.99, what)

    def test_500_is_retried(self):
        self.hub.state.add_fault("500", "GET /api/models/org/faults/revision", times=2)
        self.hub.state.add_fault("500", "GET /cdn/", times=1)
        self.pull_ok()
        self.assertFired("500", "GET /api/models/org/faults/revision", 2)
        self.assertFired("500", "GET /cdn/", 1)

    def test_connection_cut_mid_file_resumes_with_range(self):
        mark = len(self.hub.state.log)
        self.hub.state.add_fault("cut", "GET /cdn/" + self.big_sha, times=1)
        self.pull_ok()
        self.assertFired("cut", "GET /cdn/" + self.big_sha, 1)
        ranged = [r for r in self.hub.state.log[mark:]
                  if r[2] == "/cdn/" + self.big_sha and "Range" in r[3]]
        self.assertEqual(len(ranged), 1)
        self.assertNotEqual(ranged[0][3]["Range"], "bytes=0-")

    def test_interrupted_pull_continues_where_it_stopped(self):
        self.hub.state.add_fault("stall", "GET /cdn/" + self.big_sha, times=1)
        mark = len(self.hub.state.log)
        p = subprocess.Popen([ARGS.df11, "pull", self.repo, "--threads", "1"], env=self.env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        blob = os.path.join(self.home, "hub", "models--org--faults", "blobs", self.big_sha)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if any(r[2] == "/cdn/" + self.big_sha for r in self.hub.state.log[mark:]):
                break
            time.sleep(0.05)
        time.sleep(1.0)  # the first half has arrived; the server is silent now
        p.send_signal(2)
        out, err = p.communicate(timeout=20)
        self.assertEqual(p.returncode, 130, err)
        self.assertNotIn(TOKEN, out + err)
        self.assertFalse(os.path.exists(blob))
        kept = os.path.getsize(blob + ".incomplete")
        self.assertGreater(kept, 0)
        mark = len(self.hub.state.log)
        r = self.df11("pull", self.repo, "--json")
        ranged = [x for x in self.hub.state.log[mark:] if x[2] == "/cdn/" + self.big_sha]
        self.assertEqual([x[3].get("Range") for x in ranged], [f"bytes={kept}-"])
        same_tree(self, self.model, json.loads(r.stdout)["path"], ignore={".gitattributes"})
        self.assertEqual(self.cache_leftovers(self.home), [])

    def test_wrong_size_once_is_retried(self):
        self.hub.state.add_fault("wrong_size", "GET /cdn/" + self.big_sha, times=1)
        self.pull_ok()
        self.assertFired("wrong_size", "GET /cdn/" + self.big_sha, 1)

    def test_wrong_hash_every_time_fails_with_nothing_partial(self):
        self.hub.state.add_fault("wrong_hash", "GET /cdn/" + self.big_sha, times=100)
        r = self.df11("pull", self.repo, expect=1)
        self.assertIn("SHA-256", r.stderr)
        self.assertIn("corrupt_data", r.stderr)
        storage = os.path.join(self.home, "hub", "models--org--faults")
        self.assertFalse(os.path.exists(os.path.join(storage, "blobs", self.big_sha)))
        self.assertEqual(self.cache_leftovers(self.home), [])
        snap = [os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(storage, "snapshots"))
                for f in fs if f == self.big]
        self.assertEqual(snap, [])

    def test_wrong_size_every_time_fails(self):
        self.hub.state.add_fault("wrong_size", "GET /cdn/" + self.big_sha, times=100)
        r = self.df11("pull", self.repo, expect=1)
        self.assertIn("announced", r.stderr)
        self.assertEqual(self.cache_leftovers(self.home), [])

    def test_hostile_file_name_is_refused(self):
        self.hub.state.add_fault("hostile_name", "GET /api/models/org/faults/revision", times=1)
        r = self.df11("pull", self.repo, expect=1)
        self.assertIn("unsafe file name", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.home, "hub", "escape.txt")))
        self.assertFalse(os.path.exists(os.path.join(self.home, "hub", "models--org--faults")))

    def test_persistent_500_gives_up_with_exit_3(self):
        self.hub.state.add_fault("500", "GET /api/models/org/faults/revision", times=100)
        r = self.df11("pull", self.repo, expect=3)
        self.assertIn("HTTP 500", r.stderr)

    def test_push_faults_are_retried(self):
        self.hub.state.add_fault("500", "PUT /part/", times=1)
        self.hub.state.add_fault("429", "POST /api/models/org/push-faults/commit", times=1)
        folder = os.path.join(self.home, "df11")
        shutil.copytree(self.df11_dir, folder)
        self.df11("push", folder, "org/push-faults")
        self.assertFired("500", "PUT /part/", 1)
        self.assertFired("429", "POST /api/models/org/push-faults/commit", 1)
        path = self.snapshot_download("org/push-faults", os.path.join(self.home, "hf"))
        same_tree(self, folder, path, ignore={".gitattributes"})


class PushTests(HubTestBase):
    def copy_df11(self, name="df11"):
        folder = os.path.join(self.home, name)
        shutil.copytree(self.df11_dir, folder)
        return folder

    def test_push_then_snapshot_download_byte_for_byte(self):
        folder = self.copy_df11()
        self.hub.state.lfs_objects.clear()  # other tests of the class pushed the same objects
        r = self.df11("push", folder, "me/model-DF11", "--base-model", "org/base", "--json")
        result = json.loads(r.stdout)
        self.assertTrue(result["wrote_model_card"])
        self.assertEqual(result["commits"], 1)
        self.assertGreater(result["lfs_uploaded"], 0)
        # The verify pass gave the SHA-256 of every file it read (shards, recorded side
        # files): push hashed only the model card it wrote after verifying.
        self.assertEqual(result["files_hashed"], 1)
        self.assertEqual(result["files"], len(tree_files(folder)))
        card = read(os.path.join(folder, "README.md"))
        self.assertTrue(card.startswith("---\nbase_model: \"org/base\"\nbase_model_relation: quantized\n"))
        self.assertIn("  - dfloat11\n  - df11\n  - lossless compression\n", card)
        self.assertIn("pipeline_tag: text-generation\n", card)
        self.assertIn("DFloat11Model.from_pretrained(\"me/model-DF11\"", card)
        self.assertIn("| Whole model |", card)
        path = self.snapshot_download("me/model-DF11", os.path.join(self.home, "hf"))
        same_tree(self, folder, path, ignore={".gitattributes"})
        # Multipart was used for the larger shards; the CDN never saw the token.
        self.assertTrue(self.hub.state.requests("PUT", "/part/"))
        # The pushed folder still verifies, without a word about the card (df11's own file).
        r = self.df11("verify", folder, "-q")
        self.assertEqual(r.stderr, "")
        self.assertIn("<!-- df11 model card: written by df11 push, not a file of the original "
                      "model -->", card)

    def test_push_again_sends_no_stored_object(self):
        folder = self.copy_df11()
        self.df11("push", folder, "me/resume-a")
        r = self.df11("push", folder, "me/resume-b", "--json")
        result = json.loads(r.stdout)
        self.assertEqual(result["lfs_uploaded"], 0)
        # The card is a side file the folder record does not list: hashed by push itself.
        self.assertEqual(result["files_hashed"], 1)
        self.assertGreater(result["lfs_already_stored"], 0)
        self.assertEqual(result["bytes_uploaded"], 0)
        # verify ran (beside the upload) and its timings are reported
        self.assertGreater(result["seconds"]["verify"], 0)
        self.assertGreaterEqual(result["seconds"]["waiting_for_verify"], 0)
        self.assertGreater(result["seconds"]["transfer"], 0)

    def test_push_refuses_a_folder_that_fails_verify(self):
        folder = self.copy_df11()
        shard = sorted(n for n in os.listdir(folder) if n.endswith(".safetensors"))[0]
        with open(os.path.join(folder, shard), "r+b") as f:
            f.seek(-100, os.SEEK_END)
            b = f.read(1)
            f.seek(-100, os.SEEK_END)
            f.write(bytes([b[0] ^ 0xFF]))
        # Verify runs beside the upload: the repository push created for it is deleted again
        # when the verdict is a refusal, and nothing was committed.
        r = self.df11("push", folder, "me/broken", expect=1)
        self.assertIn("refusing to push", r.stderr)
        self.assertIn("FAIL", r.stdout)
        self.assertNotIn("me/broken", self.hub.state.repos)
        self.assertEqual(self.hub.state.deleted_repos, ["me/broken"])
        self.assertFalse(self.hub.state.requests("POST", "/api/models/me/broken/commit/"))
        self.assertFalse(os.path.exists(os.path.join(folder, "README.md")))
        # A repository that existed before is left as it was: no commit, not deleted.
        self.df11("push", self.copy_df11("good"), "me/kept")
        repo = self.hub.state.repos["me/kept"]
        head = repo.refs["main"]
        self.df11("push", folder, "me/kept", expect=1)
        self.assertIs(self.hub.state.repos["me/kept"], repo)
        self.assertEqual(repo.refs["main"], head)
        self.assertEqual(self.hub.state.deleted_repos, ["me/broken"])
        # A folder df11 did not write is refused before anything is created.
        r = self.df11("push", self.model, "me/bf16", expect=1)
        self.assertIn("not a DF11 folder", r.stderr)
        self.assertNotIn("me/bf16", self.hub.state.repos)
        self.assertEqual(self.hub.state.deleted_repos, ["me/broken"])

    def test_interrupted_push_commits_nothing_and_resumes(self):
        folder = self.copy_df11()
        self.hub.state.add_fault("429", "PUT /upload/", times=1000)
        p = subprocess.Popen([ARGS.df11, "push", folder, "me/interrupted"], env=self.env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not self.hub.state.requests("PUT", "/upload/"):
            time.sleep(0.05)
        p.send_signal(2)
        out, err = p.communicate(timeout=20)
        self.assertEqual(p.returncode, 130, err)
        self.assertIn("interrupted", err)
        self.hub.state.clear_faults()
        # Interrupted is not refused: the repository stays (empty), nothing is committed, the
        # folder has no card yet.
        self.assertIn("me/interrupted", self.hub.state.repos)
        self.assertEqual(self.hub.state.deleted_repos, [])
        self.assertFalse(self.hub.state.requests("POST", "/api/models/me/interrupted/commit/"))
        self.assertFalse(os.path.exists(os.path.join(folder, "README.md")))
        r = self.df11("push", folder, "me/interrupted", "--json")
        self.assertTrue(json.loads(r.stdout)["wrote_model_card"])
        path = self.snapshot_download("me/interrupted", os.path.join(self.home, "hf"))
        same_tree(self, folder, path, ignore={".gitattributes"})

    def test_push_create_pr_and_revision(self):
        folder = self.copy_df11()
        r = self.df11("push", folder, "me/pr-model", "--create-pr", "--json")
        result = json.loads(r.stdout)
        self.assertIn("/discussions/1", result["pr_url"])
        repo = self.hub.state.repos["me/pr-model"]
        self.assertIn("refs/pr/1", repo.refs)
        self.assertEqual(len(repo.commits[repo.refs["main"]]), 1)  # main has .gitattributes only
        r = self.df11("push", folder, "me/pr-model", "--revision", "nobranch", expect=3)
        self.assertIn("RevisionNotFound", r.stderr)

    def one_shard_df11(self):
        """The class's model compressed as one shard (model.safetensors, no index)."""
        bf16 = os.path.join(self.home, "one-shard")
        subprocess.run([ARGS.mkmodel, bf16, "--layers", "2", "--hidden", "256",
                        "--intermediate", "512", "--vocab", "2000", "--shard-size", "100MB",
                        "--seed", "3"], check=True, capture_output=True)
        folder = os.path.join(self.home, "one-shard-df11")
        self.df11("compress", bf16, "-o", folder, "-q")
        self.assertEqual(sorted(n for n in os.listdir(folder) if "safetensors" in n),
                         ["model.safetensors"])
        return folder

    def remote_files(self, repo, rev="main"):
        r = self.hub.state.repos[repo]
        return sorted(r.commits[r.refs[rev]])

    def test_push_makes_the_remote_match_the_folder(self):
        # A repo that holds the sharded layout, then a one-shard folder pushed to it: the old
        # shards and index go in the same commit, and push says so.
        sharded = self.copy_df11()
        self.df11("push", sharded, "me/relayout")
        old = [n for n in self.remote_files("me/relayout") if "safetensors" in n]
        self.assertIn("model.safetensors.index.json", old)
        repo = self.hub.state.repos["me/relayout"]
        commits = len(repo.commits)
        folder = self.one_shard_df11()
        r = self.df11("push", folder, "me/relayout", "--json")
        result = json.loads(r.stdout)
        self.assertEqual(result["commits"], 1)
        self.assertEqual(len(repo.commits), commits + 1)
        self.assertEqual(sorted(result["deleted"]), sorted(old))
        self.assertEqual(self.remote_files("me/relayout"),
                         sorted([".gitattributes", *tree_files(folder)]))
        self.df11("verify", "me/relayout", "-q")
        # Without --json the summary names what was deleted.
        self.df11("push", sharded, "me/relayout-text")
        r = self.df11("push", folder, "me/relayout-text")
        self.assertIn(f"deleted {len(old)} remote files the folder does not have: ", r.stdout)
        self.assertIn("model.safetensors.index.json", r.stdout)

    def test_push_create_pr_holds_only_the_folder(self):
        sharded = self.copy_df11()
        self.df11("push", sharded, "me/relayout-pr")
        folder = self.one_shard_df11()
        r = self.df11("push", folder, "me/relayout-pr", "--create-pr", "--json")
        self.assertGreater(len(json.loads(r.stdout)["deleted"]), 1)
        self.assertEqual(self.remote_files("me/relayout-pr", "refs/pr/1"),
                         sorted([".gitattributes", *tree_files(folder)]))
        self.df11("verify", "me/relayout-pr@refs/pr/1", "-q")

    def test_push_of_an_unchanged_folder_commits_nothing(self):
        folder = self.copy_df11()
        self.df11("push", folder, "me/same")
        repo = self.hub.state.repos["me/same"]
        head, commits = repo.refs["main"], len(repo.commits)
        r = self.df11("push", folder, "me/same")
        self.assertIn("me/same is up to date with " + folder + ": nothing to commit", r.stdout)
        self.assertEqual(repo.refs["main"], head)
        self.assertEqual(len(repo.commits), commits)
        result = json.loads(self.df11("push", folder, "me/same", "--json").stdout)
        self.assertEqual((result["command"], result["ok"]), ("push", True))
        self.assertTrue(result["up_to_date"])
        self.assertEqual(result["commits"], 0)
        self.assertEqual(result["commit"], head)
        self.assertEqual(result["deleted"], [])
        self.assertEqual(len(repo.commits), commits)
        # One changed file: a commit with that file alone.
        with open(os.path.join(folder, "notes.txt"), "w") as f:
            f.write("changed\n")
        result = json.loads(self.df11("push", folder, "me/same", "--json").stdout)
        self.assertFalse(result["up_to_date"])
        self.assertEqual(result["commits"], 1)
        self.assertEqual(result["files_committed"], 1)

    def test_push_without_token_is_refused(self):
        env = self.env()
        env.pop("HF_TOKEN")
        r = self.df11("push", self.copy_df11(), "me/notoken", expect=2, env=env)
        self.assertIn("HF_TOKEN", r.stderr)
        # The token file is read when HF_TOKEN is absent.
        with open(os.path.join(self.home, "token"), "w") as f:
            f.write(TOKEN + "\n")
        self.df11("push", self.copy_df11("df11b"), "me/tokenfile", env=env)


class ValidationTests(HubTestBase):
    """Arguments, token and target are checked before any work: nothing is pulled,
    compressed, created or uploaded for a push that cannot succeed."""

    def tearDown(self):
        self.hub.state.token_role = "write"
        super().tearDown()

    def test_push_revision_of_a_new_repo_is_refused_before_creating_it(self):
        mark = len(self.hub.state.log)
        r = self.df11("push", self.df11_dir, "me/new-dev", "--private", "--revision", "dev",
                      expect=2)
        self.assertIn("me/new-dev does not exist yet, and a new repository has only the branch "
                      "main", r.stderr)
        self.assertNotIn("me/new-dev", self.hub.state.repos)
        self.assertFalse([x for x in self.hub.state.log[mark:] if x[2] == "/api/repos/create"])

    def test_read_only_token_and_foreign_namespace_are_refused_first(self):
        self.hub.state.token_role = "read"
        r = self.df11("push", self.df11_dir, "me/read-only", expect=2)
        self.assertIn("is read-only: pushing to me/read-only needs one with write access",
                      r.stderr)
        self.assertNotIn("me/read-only", self.hub.state.repos)
        self.hub.state.token_role = "write"
        r = self.df11("push", self.df11_dir, "someone-else/x", expect=2)
        self.assertIn("someone-else/x: the Hub token's account me is not 'someone-else' nor a "
                      "member of that organisation", r.stderr)
        self.assertNotIn("someone-else/x", self.hub.state.repos)
        # With --json the failure is one document on stdout.
        r = self.df11("push", self.df11_dir, "someone-else/x", "--json", expect=2)
        doc = json.loads(r.stdout)
        self.assertEqual((doc["command"], doc["ok"], doc["error"]["code"]),
                         ("push", False, "invalid_argument"))
        r = self.df11("publish", "org/none", "someone-else/x", "--json", expect=2)
        self.assertEqual(json.loads(r.stdout)["command"], "publish")
        r = self.df11("pull", "org/does-not-exist", "--json", expect=3)
        self.assertEqual(json.loads(r.stdout)["error"]["code"], "not_found")

    def test_publish_checks_the_token_and_target_before_pulling(self):
        self.upload_bf16("org/pub-checked")
        work = os.path.join(self.home, "pub-checked")
        env = self.env()
        env.pop("HF_TOKEN")
        mark = len(self.hub.state.log)
        r = self.df11("publish", "org/pub-checked", "me/pub-checked", "-o", work, expect=2,
                      env=env)
        self.assertIn("push needs a Hub token with write access", r.stderr)
        self.assertEqual(self.hub.state.log[mark:], [])  # not even a listing
        self.assertFalse(os.path.exists(work))
        self.assertFalse(os.path.exists(os.path.join(self.home, "hub")))
        self.hub.state.token_role = "read"
        r = self.df11("publish", "org/pub-checked", "me/pub-checked", "-o", work, expect=2)
        self.assertIn("is read-only", r.stderr)
        self.assertEqual(self.downloads(mark), [])
        self.assertFalse(os.path.exists(work))

    def test_failed_push_deletes_the_repo_it_created(self):
        # The commit is refused (HTTP 400): nothing was committed, so the repository this push
        # created goes again.
        self.hub.state.add_fault("400", "POST /api/models/me/commit-refused/commit", times=1)
        r = self.df11("push", self.df11_dir, "me/commit-refused", expect=2)
        self.assertIn("commit", r.stderr)
        self.assertNotIn("me/commit-refused", self.hub.state.repos)
        self.assertEqual(self.hub.state.deleted_repos[-1], "me/commit-refused")


class NetworkTests(HubTestBase):
    """No network: HF_HUB_OFFLINE, a refused port, a server that never answers. Each fails (or
    resolves from the cache) in seconds, saying what it waits for."""

    def test_offline_pull_resolves_from_the_cache_or_fails_at_once(self):
        self.upload_bf16("org/offline")
        online = self.df11("pull", "org/offline").stdout.strip()
        mark = len(self.hub.state.log)
        r = self.df11("pull", "org/offline", env=self.env(HF_HUB_OFFLINE="1"))
        self.assertEqual(r.stdout.strip(), online)
        r = self.df11("pull", "org/offline", "--json", env=self.env(HF_HUB_OFFLINE="1"))
        self.assertEqual(json.loads(r.stdout)["files_downloaded"], 0)
        # Hub ids where a folder is expected, and inspect: from the cache too.
        self.df11("inspect", "org/offline", env=self.env(HF_HUB_OFFLINE="1"))
        out = os.path.join(self.home, "offline-df11")
        self.df11("compress", "org/offline", "-o", out, "-q", env=self.env(HF_HUB_OFFLINE="1"))
        # Not in the cache: at once, naming the variable.
        r = self.df11("pull", "org/not-cached", expect=3, env=self.env(HF_HUB_OFFLINE="1"))
        self.assertIn("org/not-cached@main: not in the cache", r.stderr)
        self.assertIn("HF_HUB_OFFLINE is set", r.stderr)
        r = self.df11("push", out, "me/offline", expect=3, env=self.env(HF_HUB_OFFLINE="1"))
        self.assertIn("HF_HUB_OFFLINE is set", r.stderr)
        # No request at all, so nothing to wait for (no wall time is asserted).
        self.assertEqual(self.hub.state.log[mark:], [])

    def test_refused_port_fails_in_seconds_saying_so(self):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        r = self.df11("pull", "org/x", expect=3,
                      env=self.env(HF_ENDPOINT=f"http://127.0.0.1:{port}"))
        # Two announced retries (0.5 s and 1 s back-off), then the error: the attempts are
        # counted rather than timed, which a loaded machine could miss.
        self.assertEqual(r.stderr.count("note: "), 2, r.stderr)
        self.assertIn("note: list org/x@main: network: connection refused: retrying in 0.5 s "
                      "(attempt 2 of 3)", r.stderr)
        self.assertIn("error: list org/x@main: network: connection refused", r.stderr)

    def test_silent_server_times_out_after_hf_hub_etag_timeout(self):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(8)  # accepts (the kernel does), never answers
        try:
            r = self.df11("pull", "org/x", expect=3,
                          env=self.env(HF_ENDPOINT=f"http://127.0.0.1:{s.getsockname()[1]}",
                                       HF_HUB_ETAG_TIMEOUT="1"))
        finally:
            s.close()
        self.assertIn("no answer for 1 s (HF_HUB_ETAG_TIMEOUT): retrying in", r.stderr)
        self.assertEqual(r.stderr.count("note: "), 2)
        r = self.df11("pull", "org/x", expect=2, env=self.env(HF_HUB_ETAG_TIMEOUT="soon"))
        self.assertIn("HF_HUB_ETAG_TIMEOUT='soon': must be a number of seconds", r.stderr)


class HubIdTests(HubTestBase):
    def test_commands_accept_hub_ids(self):
        self.upload_bf16("org/ids")
        out = os.path.join(self.home, "out")
        self.df11("compress", "org/ids", "-o", out, "-q")
        self.df11("verify", out, "--against", self.model, "-q")
        self.df11("push", out, "me/ids-DF11", "-q")
        self.df11("verify", "me/ids-DF11", "--against", "org/ids", "-q")
        restored = os.path.join(self.home, "restored")
        self.df11("decompress", "me/ids-DF11", "-o", restored, "-q")
        # The DF11 repo's model card and .gitattributes are the publication's, not the
        # original's: verify says nothing of them, decompress leaves them out. (The original
        # is org/ids's snapshot: its .gitattributes was compressed with it and comes back.)
        r = self.df11("verify", "me/ids-DF11")
        self.assertEqual(r.stderr, "")
        self.assertFalse(os.path.exists(os.path.join(restored, "README.md")))
        same_tree(self, self.model, restored, ignore={".gitattributes"})
        r = self.df11("inspect", "me/ids-DF11", "--json")
        self.assertEqual(json.loads(r.stdout)["kind"], "df11")

    def test_publish_pull_compress_verify_push_and_resume(self):
        self.upload_bf16("org/pub")
        work = os.path.join(self.home, "pub-DF11")
        r = self.df11("publish", "org/pub", "me/pub-DF11", "-o", work, "--json")
        result = json.loads(r.stdout)
        self.assertEqual((result["command"], result["ok"]), ("publish", True))
        self.assertTrue(result["compressed"])
        path = self.snapshot_download("me/pub-DF11", os.path.join(self.home, "hf"))
        self.assertIn("base_model: \"org/pub\"", read(os.path.join(path, "README.md")))
        same_tree(self, work, path, ignore={".gitattributes"})
        # Run again: nothing pulled, nothing compressed, nothing sent.
        mark = len(self.hub.state.log)
        r = self.df11("publish", "org/pub", "me/pub-DF11", "-o", work, "--json")
        result = json.loads(r.stdout)
        self.assertFalse(result["compressed"])
        self.assertEqual(result["source"]["files_downloaded"], 0)
        self.assertEqual(result["push"]["lfs_uploaded"], 0)
        self.assertEqual(self.downloads(mark), [])


class RemoteInspectTests(HubTestBase):
    """`df11 inspect ORG/NAME` reads headers (and a sample of a BF16 repo's weights) with Range
    requests: the server's byte counter proves how little it read."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # Two 24 MB shards: large enough that reading a whole shard would show in the count.
        cls.big = os.path.join(cls.tmp, "big")
        subprocess.run([ARGS.mkmodel, cls.big, "--size", "48MB", "--shard-size", "24MB",
                        "--seed", "5"], check=True, capture_output=True)
        cls.big_bytes = sum(os.path.getsize(p) for p in tree_files(cls.big).values())
        api = huggingface_hub_api(cls.hub.url)
        api.create_repo("org/remote-big")
        api.upload_folder(repo_id="org/remote-big", folder_path=cls.big)
        api.create_repo("me/remote-df11")
        api.upload_folder(repo_id="me/remote-df11", folder_path=cls.df11_dir)

    def served_since(self, mark):
        # A server thread records its count just after its last write, which can be after
        # df11 has read the bytes and exited: wait until the count holds still.
        last = None
        for _ in range(40):
            with self.hub.state.lock:
                now = sum(n for _, _, n in self.hub.state.sent[mark:])
            if now == last:
                return now
            last = now
            time.sleep(0.1)
        return last

    def local_json(self, path):
        return json.loads(self.df11("inspect", path, "--json").stdout)

    def test_bf16_repo_headers_and_a_sample_only(self):
        mark = len(self.hub.state.sent)
        log_mark = len(self.hub.state.log)
        r = self.df11("inspect", "org/remote-big")
        served = self.served_since(mark)
        self.assertIn("remote: org/remote-big at ", r.stdout)
        self.assertIn("PREDICTED", r.stdout)
        self.assertIn("model.layers.0", r.stdout)
        # Headers plus at most 64 KiB per group: far below the 48 MB model.
        self.assertLess(served, self.big_bytes // 50, r.stdout)
        # Every download carried a Range header; nothing went into the cache.
        for what, rng, _ in self.hub.state.sent[mark:]:
            self.assertIsNotNone(rng, what)
        # Each file's resolve URL was asked once: later reads go to the CDN URL it gave.
        resolves = [r[2] for r in self.hub.state.log[log_mark:]
                    if r[1] == "GET" and "/org/remote-big/resolve/" in r[2]]
        self.assertEqual(len(resolves), len(set(resolves)), resolves)
        self.assertFalse(os.path.exists(os.path.join(self.home, "hub")))

        mark = len(self.hub.state.sent)
        remote = json.loads(self.df11("inspect", "org/remote-big", "--json").stdout)
        self.assertEqual(remote["remote"]["bytes_read"], self.served_since(mark))
        self.assertEqual(remote["remote"]["sizes"], "predicted")
        self.assertEqual(remote["kind"], "bf16")
        local = self.local_json(self.big)
        self.assertEqual([f["size"] for f in remote["files"]], [f["size"] for f in local["files"]])
        self.assertEqual(remote["dtypes"], local["dtypes"])
        self.assertEqual([g["name"] for g in remote["groups"]], [g["name"] for g in local["groups"]])
        for rg, lg in zip(remote["groups"], local["groups"]):
            self.assertEqual(rg["n_elements"], lg["n_elements"])
            self.assertEqual(rg["bytes"]["sign_mantissa"], lg["bytes"]["sign_mantissa"])
            self.assertEqual(rg["bytes"]["split_positions"], lg["bytes"]["split_positions"])
        # The prediction from the sample is close to the exact ratio of every weight.
        self.assertAlmostEqual(remote["totals"]["coded_ratio"], local["totals"]["coded_ratio"],
                               delta=0.01)
        self.assertEqual(sorted(x["name"] for x in remote["raw_tensors"]),
                         sorted(x["name"] for x in local["raw_tensors"]))

    def test_df11_repo_stored_sizes_from_the_headers(self):
        mark = len(self.hub.state.sent)
        remote = json.loads(self.df11("inspect", "me/remote-df11", "--json").stdout)
        self.assertEqual(remote["kind"], "df11")
        self.assertEqual(remote["remote"]["sizes"], "stored")
        self.assertEqual(remote["remote"]["sample_bytes"], 0)
        self.assertEqual(remote["remote"]["bytes_read"], self.served_since(mark))
        local = self.local_json(self.df11_dir)
        self.assertEqual([(g["name"], g["bytes"], [m["name"] for m in g["members"]])
                          for g in remote["groups"]],
                         [(g["name"], g["bytes"], [m["name"] for m in g["members"]])
                          for g in local["groups"]])
        self.assertEqual(remote["totals"]["coded_ratio"], local["totals"]["coded_ratio"])
        self.assertIsNone(remote["groups"][0]["entropy_bits_per_weight"])
        self.assertLess(remote["remote"]["bytes_read"], remote["totals"]["file_bytes"] // 10)
        r = self.df11("inspect", "me/remote-df11")
        self.assertIn("stored bytes, from the headers", r.stdout)

    def test_server_ignoring_range_is_refused_without_a_download(self):
        self.hub.state.add_fault("ignore_range", "GET /cdn/", times=1000)
        mark = len(self.hub.state.sent)
        r = self.df11("inspect", "org/remote-big", expect=3)
        self.hub.state.clear_faults()
        self.assertIn("ignored the Range request", r.stderr)
        self.assertEqual(r.stdout, "")
        # The client hung up after the headers: the server got rid of what the socket buffers
        # took at most, not the 24 MB shard.
        self.assertLess(self.served_since(mark), self.big_bytes // 4)
        self.assertFalse(os.path.exists(os.path.join(self.home, "hub")))

    def test_refused_cdn_url_is_resolved_again(self):
        # The shards' header reads reuse the CDN URL the length reads were sent to; one is
        # refused (an expired signature): df11 asks the resolve URL again and goes on.
        self.hub.state.add_fault("403", "GET /cdn/", times=1)
        self.hub.state.faults[-1]["match"] = "bytes=8-"
        r = json.loads(self.df11("inspect", "org/remote-big", "--json").stdout)
        self.assertEqual(self.hub.state.faults[-1]["times"], 0)  # the 403 was sent
        self.assertEqual(r["kind"], "bf16")

    def test_many_experts_are_sampled_eight_at_most(self):
        # One block of 40 expert matrices (a MoE layer): 8 of them are sampled, one request
        # each, not 40.
        import random
        import struct
        rng = random.Random(7)
        header, blobs, offset = {}, [], 0
        for e in range(40):
            n = 64 * 96
            data = b"".join(struct.pack("<f", rng.gauss(0, 0.02))[2:] for _ in range(n))
            header[f"model.layers.0.mlp.experts.{e}.down_proj.weight"] = {
                "dtype": "BF16", "shape": [64, 96], "data_offsets": [offset, offset + len(data)]}
            blobs.append(data)
            offset += len(data)
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        moe = os.path.join(self.home, "moe")
        os.makedirs(moe)
        with open(os.path.join(moe, "model.safetensors"), "wb") as f:
            f.write(len(text).to_bytes(8, "little") + text + b"".join(blobs))
        api = self.hf_api()
        api.create_repo("org/remote-moe")
        api.upload_folder(repo_id="org/remote-moe", folder_path=moe)
        remote = json.loads(self.df11("inspect", "org/remote-moe", "--json").stdout)
        self.assertEqual([g["name"] for g in remote["groups"]], ["model.layers.0"])
        self.assertEqual(len(remote["groups"][0]["members"]), 40)
        # listing, length, header (+1 redirect to the CDN), 8 samples
        self.assertEqual(remote["remote"]["requests"], 1 + 1 + 1 + 1 + 8)
        local = self.local_json(moe)
        self.assertAlmostEqual(remote["totals"]["coded_ratio"], local["totals"]["coded_ratio"],
                               delta=0.01)

    def test_transfers_option(self):
        one = json.loads(self.df11("inspect", "org/remote-big", "--json", "--transfers", "1").stdout)
        eight = json.loads(self.df11("inspect", "org/remote-big", "--json").stdout)
        self.assertEqual(one["groups"], eight["groups"])
        for bad in ("0", "65", "x"):
            r = self.df11("inspect", "org/remote-big", "--transfers", bad, expect=2)
            self.assertIn("--transfers " + bad + ": must be a whole number from 1 to 64", r.stderr)

    def test_absurd_header_length_is_refused_after_8_bytes(self):
        bad = os.path.join(self.home, "bad")
        os.makedirs(bad)
        with open(os.path.join(bad, "model.safetensors"), "wb") as f:
            f.write((1 << 40).to_bytes(8, "little") + b"{" + bytes(200000))
        api = self.hf_api()
        api.create_repo("org/remote-bad")
        api.upload_folder(repo_id="org/remote-bad", folder_path=bad)
        mark = len(self.hub.state.sent)
        r = self.df11("inspect", "org/remote-bad", expect=1)
        self.assertIn("org/remote-bad/model.safetensors: header length 1099511627776 exceeds "
                      "Max_Header_Bytes", r.stderr)
        self.assertEqual(self.served_since(mark), 8)


def huggingface_hub_api(url):
    import huggingface_hub
    return huggingface_hub.HfApi(endpoint=url, token=TOKEN)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--df11", required=True)
    parser.add_argument("--mkmodel", required=True)
    ARGS, rest = parser.parse_known_args()
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            print("huggingface_hub is missing and CI is set: failing (pip install huggingface_hub)")
            return 1
        print("SKIP: huggingface_hub is not installed (pip install huggingface_hub)")
        return 77
    prog = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
