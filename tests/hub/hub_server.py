"""A strict local Hugging Face Hub for the df11 Hub tests (Python standard library only).

It implements the endpoints that `df11 pull/push` and `huggingface_hub` (HF_HUB_DISABLE_XET=1)
use, on two listening sockets:
  - the Hub API on http://127.0.0.1:<hub_port>;
  - a "CDN" on http://localhost:<cdn_port>: LFS downloads are redirected there and LFS uploads
    go there, so a client that leaks `Authorization` to another host is caught (strict: 400).

Strictness: unknown endpoints answer 404, malformed JSON 400, an LFS batch without the
git-lfs media types 400, a commit naming an LFS object that was never uploaded 400, a path with
"..", a leading "/" or a backslash 400, more than 256 files in one preupload call 400. Every
request is recorded in `state.log` for the tests' assertions.

Faults are injected through `state.add_fault(kind, match, times)`: the next `times` requests
whose "<METHOD> <path>" contains `match` get the fault; `state.fired` records each fault sent
and `state.fired_count(kind, match)` counts them, so that a test proves its fault happened:
  "429"         429 with Retry-After: 1
  "500"         500
  "400"         400 (a request the server refuses; not retried)
  "403"         403 (an expired signed URL); matched against "<METHOD> <path> <Range header>"
  "cut"         GET: headers with the full length, half the body, then the connection closes
  "stall"       GET: headers with the full length, half the body, then 30 s of silence
  "wrong_size"  GET: the body is one byte short (Content-Length matches the short body)
  "wrong_hash"  GET: the right length with one byte flipped
  "hostile_name" the revision listing and the tree listing gain a file named "../escape.txt"
  "ignore_range" GET: a Range header is ignored: 200 with the whole file (as a server without
                Range support answers)

Downloads honour "Range: bytes=A-B" and "bytes=A-" (206 with Content-Range). The file bytes
each download sent are counted: `state.body_bytes` in all, and `state.sent` lists
(what, range header, bytes sent) per request, so that a test can prove how little a client
read (a client that drops the connection early stops the count there, up to what the
socket buffers took).

Run standalone: python3 hub_server.py --data DIR [--token T] (prints the two URLs).
"""

import argparse
import base64
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import threading
import time
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LFS_MEDIA = "application/vnd.git-lfs+json"
REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
MAX_JSON_BODY = 64 << 20


def git_blob_oid_file(path, size):
    h = hashlib.sha1()
    h.update(b"blob %d\0" % size)
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            h.update(chunk)
    return h.hexdigest()


def bad_path(p):
    return (not isinstance(p, str) or p == "" or p.startswith("/") or "\\" in p or "\0" in p
            or any(part in ("", ".", "..") for part in p.split("/")))


class FileEntry:
    def __init__(self, size, sha256, git_oid, lfs):
        self.size, self.sha256, self.git_oid, self.lfs = size, sha256, git_oid, lfs

    def etag(self):
        return self.sha256 if self.lfs else self.git_oid


class Repo:
    def __init__(self, private):
        self.private = private
        self.commits = {}  # sha -> {path: FileEntry}
        self.refs = {}     # "main" / "refs/pr/1" -> sha
        self.pr_count = 0


class HubState:
    def __init__(self, data_dir, token=None, lfs_threshold=1 << 20, multipart_threshold=8 << 20,
                 chunk_size=4 << 20, tree_page=50, upload_rate=None):
        self.data_dir = data_dir
        # Bytes per second that all LFS uploads together may arrive at (None: as fast as
        # loopback allows): the bench's model of a network link. A shared pacing clock.
        self.upload_rate = upload_rate
        self.upload_clock = 0.0
        self.objects = os.path.join(data_dir, "objects")
        os.makedirs(self.objects, exist_ok=True)
        os.makedirs(os.path.join(data_dir, "tmp"), exist_ok=True)
        self.token = token
        self.lfs_threshold = lfs_threshold
        self.multipart_threshold = multipart_threshold
        self.chunk_size = chunk_size
        self.tree_page = tree_page
        self.repos = {}
        self.deleted_repos = []  # repo ids, in the order DELETE /api/repos/delete removed them
        self.lfs_objects = {}  # sha256 -> size
        self.multipart = {}    # upload_id -> {oid, size, parts: {n: (path, etag)}}
        self.faults = []
        self.fired = []        # (kind, match, "<METHOD> <path>", time.monotonic()) per fault sent
        self.log = []
        self.log_times = []    # time.monotonic() of each request in `log`, same order
        self.body_bytes = 0    # file bytes sent by downloads (GET resolve and CDN)
        self.sent = []         # (what, Range header or None, bytes sent) per download
        self.violations = []   # strictness failures the tests assert are empty
        self.lock = threading.Lock()
        self.hub_url = self.cdn_url = None
        # whoami-v2: the token's account, its organisations and the token's role, as the Hub
        # reports them (a test sets token_role = "read" for a read-only token).
        self.user = "me"
        self.orgs = ["org"]
        self.token_role = "write"

    # ---- test controls ----
    def add_fault(self, kind, match, times=1):
        with self.lock:
            self.faults.append({"kind": kind, "match": match, "times": times})

    def clear_faults(self):
        with self.lock:
            self.faults.clear()
            self.fired.clear()

    def take_fault(self, what, kinds):
        with self.lock:
            for f in self.faults:
                if f["times"] > 0 and f["kind"] in kinds and f["match"] in what:
                    f["times"] -= 1
                    self.fired.append((f["kind"], f["match"], what, time.monotonic()))
                    return f["kind"]
        return None

    def fired_count(self, kind, match):
        """How many times the fault added as (kind, match) was sent."""
        with self.lock:
            return sum(1 for k, m, _, _ in self.fired if (k, m) == (kind, match))

    def requests(self, method=None, contains=""):
        with self.lock:
            return [r for r in self.log if (method is None or r[1] == method) and contains in r[2]]

    # ---- storage ----
    def object_path(self, sha256):
        return os.path.join(self.objects, sha256)

    def store_regular(self, content):
        sha = hashlib.sha256(content).hexdigest()
        path = self.object_path(sha)
        if not os.path.exists(path):
            tmp = path + ".tmp" + secrets.token_hex(4)
            with open(tmp, "wb") as f:
                f.write(content)
            os.replace(tmp, path)
        oid = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
        return FileEntry(len(content), sha, oid, False)

    def create_repo(self, repo_id, private=False):
        repo = Repo(private)
        attrs = self.store_regular(b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n")
        sha = secrets.token_hex(20)
        repo.commits[sha] = {".gitattributes": attrs}
        repo.refs["main"] = sha
        self.repos[repo_id] = repo
        return repo

    def resolve(self, repo, rev):
        if rev in repo.refs:
            return repo.refs[rev]
        if rev in repo.commits:
            return rev
        return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "df11-test-hub"
    is_cdn = False

    def log_message(self, fmt, *args):  # quiet
        pass

    @property
    def state(self):
        return self.server.state

    # ---- helpers ----
    def send_json(self, code, obj, headers=None):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_error_code(self, code, error_code, message):
        body = json.dumps({"error": message}).encode()
        self.send_response(code)
        if error_code:
            self.send_header("X-Error-Code", error_code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_body_chunks(self):
        """Yields the request body (Content-Length or chunked)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                line = self.rfile.readline(1024).strip()
                n = int(line.split(b";")[0], 16)
                if n == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return
                left = n
                while left:
                    chunk = self.rfile.read(min(left, 1 << 20))
                    if not chunk:
                        raise ConnectionError("short chunk")
                    left -= len(chunk)
                    yield chunk
                self.rfile.readline(16)
        else:
            left = int(self.headers.get("Content-Length", "0"))
            while left:
                chunk = self.rfile.read(min(left, 1 << 20))
                if not chunk:
                    raise ConnectionError("short body")
                left -= len(chunk)
                yield chunk

    def read_body(self, limit=MAX_JSON_BODY):
        out = bytearray()
        for chunk in self.read_body_chunks():
            out += chunk
            if len(out) > limit:
                raise ValueError("body too large")
        return bytes(out)

    def read_json(self):
        try:
            return json.loads(self.read_body())
        except (ValueError, UnicodeDecodeError):
            return None

    def authorized(self):
        auth = self.headers.get("Authorization")
        if self.is_cdn:
            return auth is None
        if self.state.token is None:
            return True
        return auth == "Bearer " + self.state.token

    def host_ok(self):
        host = self.headers.get("Host", "")
        want = "localhost:" if self.is_cdn else "127.0.0.1:"
        return host.startswith(want)

    # ---- dispatch ----
    def handle_any(self):
        parsed = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(parsed.path)
        query = urllib.parse.parse_qs(parsed.query)
        what = f"{self.command} {path}"
        with self.state.lock:
            self.state.log.append(("cdn" if self.is_cdn else "hub", self.command, path,
                                   dict(self.headers.items())))
            self.state.log_times.append(time.monotonic())
        if not self.host_ok():
            self.state.violations.append(f"wrong Host for {what}: {self.headers.get('Host')}")
            return self.send_error_code(400, None, "wrong host")
        if self.is_cdn and self.headers.get("Authorization") is not None:
            self.state.violations.append(f"Authorization sent to the CDN host: {what}")
            return self.send_error_code(400, None, "Authorization must not reach the CDN")
        fault = self.state.take_fault(what, ("429", "500", "400"))
        if fault is None and self.state.take_fault(f"{what} {self.headers.get('Range', '')}", ("403",)):
            self.drain()
            return self.send_error_code(403, None, "injected: signature expired")
        if fault == "429":
            self.drain()
            return self.send_response_only_retry()
        if fault == "500":
            self.drain()
            return self.send_error_code(500, None, "injected server error")
        if fault == "400":
            self.drain()
            return self.send_error_code(400, None, "injected: refused")
        try:
            if self.is_cdn:
                return self.route_cdn(path, query, what)
            return self.route_hub(path, query, what)
        except (ConnectionError, BrokenPipeError):
            self.close_connection = True

    def drain(self):
        if self.command in ("POST", "PUT"):
            for _ in self.read_body_chunks():
                pass

    def send_response_only_retry(self):
        body = b'{"error":"rate limited"}'
        self.send_response(429)
        self.send_header("Retry-After", "1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = handle_any

    # ---- Hub API ----
    def route_hub(self, path, query, what):
        st = self.state
        if path == "/api/whoami-v2" and self.command == "GET":
            if st.token is None or not self.authorized():
                return self.send_error_code(401, None, "Invalid credentials in Authorization header")
            return self.send_json(200, {
                "type": "user", "name": st.user,
                "orgs": [{"type": "org", "name": o, "roleInOrg": "write"} for o in st.orgs],
                "auth": {"type": "access_token",
                         "accessToken": {"displayName": "test", "role": st.token_role}}})
        # The multipart completion URL is presigned (its upload_id is the credential), as on the
        # Hub: huggingface_hub posts it without Authorization.
        m = re.fullmatch(r"/lfs-complete/([0-9a-f]{64})", path)
        if m and self.command == "POST":
            return self.lfs_complete(m.group(1), query)
        if not self.authorized():
            self.drain()
            return self.send_error_code(401, None, "Invalid credentials in Authorization header")
        if path == "/api/repos/create" and self.command == "POST":
            return self.api_create(self.read_json())
        if path == "/api/repos/delete" and self.command == "DELETE":
            return self.api_delete(self.read_json())
        if path == "/api/validate-yaml" and self.command == "POST":
            self.read_body()
            return self.send_json(200, {"errors": [], "warnings": []})
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)(?:/revision/(.+))?", path)
        if m and self.command == "GET":
            return self.api_revision(m.group(1), m.group(2) or "main", query)
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/([^/]+)(/.*)?", path)
        if m and self.command == "GET":
            return self.api_tree(m.group(1), m.group(2), query)
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/preupload/(.+)", path)
        if m and self.command == "POST":
            return self.api_preupload(m.group(1), m.group(2))
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/commit/(.+)", path)
        if m and self.command == "POST":
            return self.api_commit(m.group(1), m.group(2), query)
        m = re.fullmatch(r"/([^/]+/[^/]+)\.git/info/lfs/objects/batch", path)
        if m and self.command == "POST":
            return self.lfs_batch(m.group(1))
        m = re.fullmatch(r"/([^/]+/[^/]+)\.git/info/lfs/objects/verify", path)
        if m and self.command == "POST":
            return self.lfs_verify()
        m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if m and self.command in ("GET", "HEAD"):
            return self.resolve_file(m.group(1), m.group(2), m.group(3), what)
        self.drain()
        return self.send_error_code(404, None, f"no endpoint {what}")

    def find_repo(self, repo_id):
        repo = self.state.repos.get(repo_id)
        if repo is None:
            self.send_error_code(404, "RepoNotFound", f"Repository Not Found for url: {repo_id}")
        return repo

    def api_create(self, body):
        if not isinstance(body, dict) or not isinstance(body.get("name"), str):
            return self.send_error_code(400, None, "create: bad body")
        org = body.get("organization") or self.state.user
        repo_id = f"{org}/{body['name']}"
        if not REPO_RE.match(repo_id):
            return self.send_error_code(400, None, "create: bad repo name")
        with self.state.lock:
            if repo_id in self.state.repos:
                return self.send_error_code(409, None, "You already created this model repo")
            self.state.create_repo(repo_id, bool(body.get("private", False)))
        return self.send_json(200, {"url": f"{self.state.hub_url}/{repo_id}", "name": repo_id})

    def api_delete(self, body):
        if not isinstance(body, dict) or not isinstance(body.get("name"), str):
            return self.send_error_code(400, None, "delete: bad body")
        repo_id = f"{body.get('organization') or self.state.user}/{body['name']}"
        with self.state.lock:
            if repo_id not in self.state.repos:
                return self.send_error_code(404, "RepoNotFound", f"Repository Not Found for url: {repo_id}")
            del self.state.repos[repo_id]
            self.state.deleted_repos.append(repo_id)
        return self.send_json(200, {})

    def listing(self, repo, sha):
        files = dict(repo.commits[sha])
        return files

    def find_revision(self, repo, rev):
        """The commit `rev` names in `repo`, or None after answering 404 RevisionNotFound."""
        sha = self.state.resolve(repo, rev)
        if sha is None:
            self.send_error_code(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        return sha

    def find_repo_revision(self, repo_id, rev):
        """(repo, sha), or (None, None) after answering the repo's or the revision's error."""
        repo = self.find_repo(repo_id)
        if repo is None:
            return None, None
        return repo, self.find_revision(repo, rev)

    def api_revision(self, repo_id, rev, query):
        repo, sha = self.find_repo_revision(repo_id, rev)
        if sha is None:
            return
        blobs = query.get("blobs", ["false"])[0].lower() in ("1", "true")
        siblings = []
        for name, e in sorted(self.listing(repo, sha).items()):
            s = {"rfilename": name}
            if blobs:
                s.update({"size": e.size, "blobId": e.git_oid})
                if e.lfs:
                    s["lfs"] = {"sha256": e.sha256, "size": e.size, "pointerSize": 134}
            siblings.append(s)
        if self.state.take_fault(f"GET /api/models/{repo_id}/revision", ("hostile_name",)):
            siblings.append({"rfilename": "../escape.txt", "size": 4, "blobId": "0" * 40})
        return self.send_json(200, {"id": repo_id, "modelId": repo_id, "sha": sha,
                                    "private": repo.private, "siblings": siblings, "tags": []})

    def api_tree(self, repo_id, rev, query):
        repo, sha = self.find_repo_revision(repo_id, rev)
        if sha is None:
            return
        entries = []
        for name, e in sorted(self.listing(repo, sha).items()):
            t = {"type": "file", "oid": e.git_oid, "size": e.size, "path": name}
            if e.lfs:
                t["lfs"] = {"oid": e.sha256, "size": e.size, "pointerSize": 134}
            entries.append(t)
        if self.state.take_fault(f"GET /api/models/{repo_id}/tree", ("hostile_name",)):
            entries.append({"type": "file", "oid": "0" * 40, "size": 4, "path": "../escape.txt"})
        # Directories are listed too, as the Hub does with recursive=true.
        dirs = sorted({n.rsplit("/", 1)[0] for n in self.listing(repo, sha) if "/" in n})
        entries = [{"type": "directory", "oid": "0" * 40, "size": 0, "path": d} for d in dirs] + entries
        cursor = int(query.get("cursor", ["0"])[0])
        page = entries[cursor:cursor + self.state.tree_page]
        headers = {}
        if cursor + self.state.tree_page < len(entries):
            nxt = f"{self.state.hub_url}/api/models/{repo_id}/tree/{rev}?recursive=true&cursor={cursor + self.state.tree_page}"
            headers["Link"] = f'<{nxt}>; rel="next"'
        return self.send_json(200, page, headers)

    def resolve_file(self, repo_id, rev, name, what):
        repo, sha = self.find_repo_revision(repo_id, rev)
        if sha is None:
            return
        e = repo.commits[sha].get(name)
        if e is None:
            return self.send_error_code(404, "EntryNotFound", f"{name} does not exist at {rev}")
        common = {"X-Repo-Commit": sha, "ETag": f'"{e.git_oid}"', "Accept-Ranges": "bytes"}
        if e.lfs:
            self.send_response(302)
            for k, v in common.items():
                self.send_header(k, v)
            self.send_header("X-Linked-Etag", f'"{e.sha256}"')
            self.send_header("X-Linked-Size", str(e.size))
            self.send_header("Location", f"{self.state.cdn_url}/cdn/{e.sha256}?sig={secrets.token_hex(4)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        common["ETag"] = f'"{e.git_oid}"'
        return self.serve_blob(e.sha256, e.size, what, common)

    def api_preupload(self, repo_id, rev):
        repo = self.find_repo(repo_id)
        body = self.read_json()
        if repo is None:
            return
        if not isinstance(body, dict) or not isinstance(body.get("files"), list):
            return self.send_error_code(400, None, "preupload: bad body")
        if len(body["files"]) > 256:
            return self.send_error_code(400, None, "preupload: more than 256 files")
        sha = self.find_revision(repo, rev)
        if sha is None:
            return
        out = []
        for f in body["files"]:
            if not isinstance(f, dict) or bad_path(f.get("path")) or not isinstance(f.get("size"), int):
                return self.send_error_code(400, None, f"preupload: bad file entry {f!r}")
            try:
                sample = base64.b64decode(f.get("sample", ""), validate=True)
            except ValueError:
                return self.send_error_code(400, None, "preupload: sample is not base64")
            if len(sample) > 512:
                return self.send_error_code(400, None, "preupload: sample longer than 512 bytes")
            lfs = f["size"] > 0 and (f["size"] >= self.state.lfs_threshold or f["path"].endswith(".safetensors"))
            existing = repo.commits[sha].get(f["path"])
            entry = {"path": f["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False}
            if existing is not None:
                entry["oid"] = existing.etag()
            out.append(entry)
        return self.send_json(200, {"files": out, "commitOid": sha})

    def lfs_batch(self, repo_id):
        st = self.state
        if self.headers.get("Accept") != LFS_MEDIA or not self.headers.get("Content-Type", "").startswith(LFS_MEDIA):
            self.drain()
            st.violations.append("LFS batch without the git-lfs media types")
            return self.send_error_code(400, None, "batch: Accept and Content-Type must be " + LFS_MEDIA)
        body = self.read_json()
        if self.find_repo(repo_id) is None:
            return
        if (not isinstance(body, dict) or body.get("operation") != "upload"
                or body.get("hash_algo", "sha256") != "sha256" or not isinstance(body.get("objects"), list)):
            return self.send_error_code(400, None, "batch: bad body")
        transfers = body.get("transfers", ["basic"])
        objects = []
        chosen = "basic"
        for o in body["objects"]:
            oid, size = o.get("oid"), o.get("size")
            if not (isinstance(oid, str) and SHA256_RE.match(oid) and isinstance(size, int) and size >= 0):
                return self.send_error_code(400, None, f"batch: bad object {o!r}")
            if st.lfs_objects.get(oid) == size:
                objects.append({"oid": oid, "size": size})  # already stored: no actions
                continue
            verify = {"href": f"{st.hub_url}/{repo_id}.git/info/lfs/objects/verify",
                      "header": {}}
            if size > st.multipart_threshold and "multipart" in transfers:
                chosen = "multipart"
                upload_id = secrets.token_hex(8)
                nparts = (size + st.chunk_size - 1) // st.chunk_size
                with st.lock:
                    st.multipart[upload_id] = {"oid": oid, "size": size, "parts": {}}
                header = {"chunk_size": str(st.chunk_size)}
                for n in range(1, nparts + 1):
                    header[str(n)] = f"{st.cdn_url}/part/{upload_id}/{n}?sig={secrets.token_hex(4)}"
                action = {"href": f"{st.hub_url}/lfs-complete/{oid}?upload_id={upload_id}", "header": header}
            else:
                action = {"href": f"{st.cdn_url}/upload/{oid}?size={size}&sig={secrets.token_hex(4)}"}
            objects.append({"oid": oid, "size": size, "authenticated": True,
                            "actions": {"upload": action, "verify": verify}})
        body = json.dumps({"transfer": chosen, "objects": objects, "hash_algo": "sha256"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", LFS_MEDIA)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def lfs_verify(self):
        body = self.read_json()
        if not isinstance(body, dict):
            return self.send_error_code(400, None, "verify: bad body")
        if self.state.lfs_objects.get(body.get("oid")) != body.get("size"):
            return self.send_error_code(404, None, "verify: object not stored")
        return self.send_json(200, {"ok": True})

    def lfs_complete(self, oid, query):
        st = self.state
        body = self.read_json()
        upload_id = query.get("upload_id", [""])[0]
        up = st.multipart.get(upload_id)
        if up is None or up["oid"] != oid or not isinstance(body, dict) or body.get("oid") != oid:
            return self.send_error_code(400, None, "complete: unknown upload or oid")
        parts = body.get("parts")
        nparts = (up["size"] + st.chunk_size - 1) // st.chunk_size
        if not isinstance(parts, list) or len(parts) != nparts:
            return self.send_error_code(400, None, "complete: wrong part count")
        tmp = os.path.join(st.data_dir, "tmp", secrets.token_hex(8))
        h = hashlib.sha256()
        size = 0
        with open(tmp, "wb") as out:
            for i, p in enumerate(parts, 1):
                got = up["parts"].get(i)
                if not isinstance(p, dict) or p.get("partNumber") != i or got is None or got[1] != p.get("etag"):
                    os.unlink(tmp)
                    return self.send_error_code(400, None, f"complete: part {i} missing or wrong etag")
                with open(got[0], "rb") as f:
                    while True:
                        chunk = f.read(1 << 20)
                        if not chunk:
                            break
                        h.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
        if size != up["size"] or h.hexdigest() != oid:
            os.unlink(tmp)
            return self.send_error_code(400, None, "complete: size or sha256 does not match the oid")
        os.replace(tmp, st.object_path(oid))
        for path, _ in up["parts"].values():
            os.unlink(path)
        with st.lock:
            st.lfs_objects[oid] = size
            del st.multipart[upload_id]
        return self.send_json(200, {"ok": True})

    def api_commit(self, repo_id, rev, query):
        st = self.state
        if self.headers.get("Content-Type", "").split(";")[0] != "application/x-ndjson":
            self.drain()
            return self.send_error_code(400, None, "commit: Content-Type must be application/x-ndjson")
        raw = self.read_body()
        repo = self.find_repo(repo_id)
        if repo is None:
            return
        sha = st.resolve(repo, rev)
        if sha is None:
            return self.send_error_code(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        lines = [ln for ln in raw.split(b"\n") if ln.strip()]
        try:
            items = [json.loads(ln) for ln in lines]
        except ValueError:
            return self.send_error_code(400, None, "commit: a line is not JSON")
        if not items or items[0].get("key") != "header" or not isinstance(items[0].get("value"), dict):
            return self.send_error_code(400, None, "commit: the first line must be the header")
        header = items[0]["value"]
        if not isinstance(header.get("summary"), str) or not header["summary"]:
            return self.send_error_code(400, None, "commit: empty summary")
        parent = header.get("parentCommit")
        if parent is not None and parent != sha:
            return self.send_error_code(412, None, "commit: parentCommit is not the head")
        files = dict(repo.commits[sha])
        for it in items[1:]:
            key, v = it.get("key"), it.get("value")
            if not isinstance(v, dict) or bad_path(v.get("path")):
                return self.send_error_code(400, None, f"commit: bad operation {it!r}"[:200])
            if key == "file":
                if v.get("encoding") != "base64":
                    return self.send_error_code(400, None, "commit: encoding must be base64")
                try:
                    content = base64.b64decode(v.get("content", ""), validate=True)
                except ValueError:
                    return self.send_error_code(400, None, "commit: content is not base64")
                files[v["path"]] = st.store_regular(content)
            elif key == "lfsFile":
                oid, size = v.get("oid"), v.get("size")
                if v.get("algo") != "sha256" or st.lfs_objects.get(oid) != size:
                    return self.send_error_code(400, None, f"commit: LFS object {oid} of {v['path']} was not uploaded")
                path = st.object_path(oid)
                files[v["path"]] = FileEntry(size, oid, git_blob_oid_file(path, size), True)
            elif key == "deletedFile":
                files.pop(v["path"], None)
            else:
                return self.send_error_code(400, None, f"commit: unknown key {key!r}")
        new_sha = secrets.token_hex(20)
        pr_url = None
        with st.lock:
            repo.commits[new_sha] = files
            if query.get("create_pr", ["0"])[0] in ("1", "true"):
                repo.pr_count += 1
                repo.refs[f"refs/pr/{repo.pr_count}"] = new_sha
                pr_url = f"{st.hub_url}/{repo_id}/discussions/{repo.pr_count}"
            else:
                repo.refs[urllib.parse.unquote(rev)] = new_sha
        return self.send_json(200, {"commitUrl": f"{st.hub_url}/{repo_id}/commit/{new_sha}",
                                    "commitOid": new_sha, "pullRequestUrl": pr_url, "success": True})

    # ---- CDN ----
    def route_cdn(self, path, query, what):
        st = self.state
        m = re.fullmatch(r"/cdn/([0-9a-f]{64})", path)
        if m and self.command in ("GET", "HEAD"):
            oid = m.group(1)
            if oid not in st.lfs_objects:
                return self.send_error_code(404, None, "no such object")
            return self.serve_blob(oid, st.lfs_objects[oid], what, {"ETag": f'"{oid}"'})
        m = re.fullmatch(r"/upload/([0-9a-f]{64})", path)
        if m and self.command == "PUT":
            return self.cdn_put(m.group(1), int(query.get("size", ["-1"])[0]))
        m = re.fullmatch(r"/part/([0-9a-f]+)/([0-9]+)", path)
        if m and self.command == "PUT":
            return self.cdn_part(m.group(1), int(m.group(2)))
        self.drain()
        return self.send_error_code(404, None, f"no CDN endpoint {what}")

    def serve_blob(self, sha256, size, what, headers):
        st = self.state
        fault = st.take_fault(what, ("cut", "stall", "wrong_size", "wrong_hash", "ignore_range")) if self.command == "GET" else None
        start = 0
        rng = None if fault == "ignore_range" else self.headers.get("Range")
        status = 200
        if rng:
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
            if not m:
                return self.send_error_code(416, None, "bad range")
            start = int(m.group(1))
            end = int(m.group(2)) if m.group(2) else size - 1
            end = min(end, size - 1)
            if start > end and size > 0:
                return self.send_error_code(416, None, "range not satisfiable")
            status = 206
        else:
            end = size - 1
        length = max(0, end - start + 1)
        send_len = length - 1 if fault == "wrong_size" and length > 0 else length
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(send_len))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        if self.command == "HEAD":
            return
        with open(st.object_path(sha256), "rb") as f:
            if fault in ("cut", "stall"):
                f.seek(start)
                self.wfile.write(f.read(max(1, length // 2)))
                self.wfile.flush()
                if fault == "stall":
                    time.sleep(30)
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if fault == "wrong_hash" and length > 0:
                f.seek(start)
                data = bytearray(f.read(length))
                data[len(data) // 2] ^= 0x01
                self.wfile.write(data)
                return
            self.wfile.flush()
            self.send_counted(f, start, send_len, what)

    def send_counted(self, f, start, count, what):
        """sendfile() in pieces, counting what the socket took even when the client leaves."""
        sent = 0
        try:
            while sent < count:
                n = os.sendfile(self.connection.fileno(), f.fileno(), start + sent,
                                min(count - sent, 8 << 20))
                if n == 0:
                    break
                sent += n
        finally:
            with self.state.lock:
                self.state.body_bytes += sent
                self.state.sent.append((what, self.headers.get("Range"), sent))

    def pace(self, n):
        """Holds this upload until `n` more bytes fit under state.upload_rate (all uploads
        share one clock, like one link); the client's sends block meanwhile (TCP window)."""
        st = self.state
        with st.lock:
            now = time.monotonic()
            st.upload_clock = max(st.upload_clock, now) + n / st.upload_rate
            wait = st.upload_clock - now
        if wait > 0:
            time.sleep(wait)

    def stream_to_tmp(self):
        st = self.state
        tmp = os.path.join(st.data_dir, "tmp", secrets.token_hex(8))
        h = hashlib.sha256()
        size = 0
        with open(tmp, "wb") as out:
            for chunk in self.read_body_chunks():
                if st.upload_rate:
                    self.pace(len(chunk))
                h.update(chunk)
                out.write(chunk)
                size += len(chunk)
        return tmp, h.hexdigest(), size

    def cdn_put(self, oid, want_size):
        st = self.state
        tmp, digest, size = self.stream_to_tmp()
        if digest != oid or size != want_size:
            os.unlink(tmp)
            return self.send_error_code(400, None, "upload: sha256 or size does not match the oid")
        os.replace(tmp, st.object_path(oid))
        with st.lock:
            st.lfs_objects[oid] = size
        return self.send_json(200, {"ok": True})

    def cdn_part(self, upload_id, n):
        st = self.state
        up = st.multipart.get(upload_id)
        tmp, digest, size = self.stream_to_tmp()
        if up is None:
            os.unlink(tmp)
            return self.send_error_code(404, None, "unknown upload")
        nparts = (up["size"] + st.chunk_size - 1) // st.chunk_size
        want = st.chunk_size if n < nparts else up["size"] - st.chunk_size * (nparts - 1)
        if not 1 <= n <= nparts or size != want:
            os.unlink(tmp)
            return self.send_error_code(400, None, f"part {n}: {size} bytes, want {want}")
        etag = '"' + digest[:32] + '"'
        with st.lock:
            old = up["parts"].get(n)
            up["parts"][n] = (tmp, etag)
        if old:
            os.unlink(old[0])
        self.send_response(200)
        self.send_header("ETag", etag)
        self.send_header("Content-Length", "0")
        self.end_headers()


class CdnHandler(Handler):
    is_cdn = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64


class LocalHub:
    """Starts the Hub and the CDN servers on free loopback ports in background threads."""

    def __init__(self, data_dir, **kwargs):
        self.state = HubState(data_dir, **kwargs)
        self.hub = _Server(("127.0.0.1", 0), Handler)
        self.cdn = _Server(("127.0.0.1", 0), CdnHandler)
        self.hub.state = self.cdn.state = self.state
        self.state.hub_url = f"http://127.0.0.1:{self.hub.server_address[1]}"
        self.state.cdn_url = f"http://localhost:{self.cdn.server_address[1]}"
        self.threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (self.hub, self.cdn)]
        for t in self.threads:
            t.start()

    @property
    def url(self):
        return self.state.hub_url

    def close(self):
        for s in (self.hub, self.cdn):
            s.shutdown()
            s.server_close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--token")
    ap.add_argument("--chunk-size", type=int, default=64 << 20)
    ap.add_argument("--multipart-threshold", type=int, default=256 << 20)
    args = ap.parse_args()
    hub = LocalHub(args.data, token=args.token, chunk_size=args.chunk_size,
                   multipart_threshold=args.multipart_threshold)
    print(hub.url, hub.state.cdn_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        hub.close()


if __name__ == "__main__":
    main()
