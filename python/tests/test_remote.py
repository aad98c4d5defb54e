"""Shards where they live, as a user names them: webdataset's URL patterns over real servers on
loopback (nginx, and s3s-fs as an S3-compatible store, which tools/test.sh installs), giving the
batches the same shards give from disk; missing objects and pipe: under GPUPREP_SECURE refused by
name. tests/remote.rs holds the faults (cut connections, stalls, changed objects)."""
import io
import os
import shutil
import socket
import subprocess
import tarfile
import time

import numpy as np
import pytest

import gpuprep

from support import PHOTOS

T = gpuprep.Transform().resize((16, 24))
BUCKET = "training"
KEYS = ("gpuprep-test", "gpuprep-test-secret")


def binary(name):
    """A server program: in GPUPREP_TEST_SERVERS, on the PATH, or Debian's /usr/sbin."""
    dirs = [os.environ.get("GPUPREP_TEST_SERVERS", "")] + os.environ["PATH"].split(os.pathsep)
    for folder in dirs + ["/usr/sbin"]:
        path = os.path.join(folder, name)
        if folder and os.access(path, os.X_OK):
            return path
    pytest.fail(f"{name} is not installed: these tests run real servers (tools/test.sh installs "
                "nginx and s3s-fs)")


def wait_for(port, process, what):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{what} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"{what} did not start listening on 127.0.0.1:{port}")


def write_shards(folder, count):
    """`count` shards of the bundled photos, key.jpg + key.cls (the photo's place)."""
    for s in range(count):
        with tarfile.open(os.path.join(folder, f"train-{s:06d}.tar"), "w") as tar:
            for k, photo in enumerate(PHOTOS):
                tar.add(photo, arcname=f"s{s}-{k:03d}.jpg")
                label = f"{s * 10 + k}".encode()
                info = tarfile.TarInfo(f"s{s}-{k:03d}.cls")
                info.size = len(label)
                tar.addfile(info, io.BytesIO(label))


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    nginx_binary, s3_binary = binary("nginx"), binary("s3s-fs")
    root = tmp_path_factory.mktemp("servers")
    www, bucket, conf_dir = root / "www", root / "s3" / BUCKET, root / "nginx"
    for folder in (www, bucket, conf_dir / "tmp"):
        folder.mkdir(parents=True)
    write_shards(www, 3)
    for shard in sorted(www.iterdir()):
        shutil.copy(shard, bucket / shard.name)
    with socket.socket() as a, socket.socket() as b:  # held together: two different ports
        a.bind(("127.0.0.1", 0))
        b.bind(("127.0.0.1", 0))
        http_port, s3_port = a.getsockname()[1], b.getsockname()[1]
    user = "user root root;" if os.geteuid() == 0 else ""
    temp = conf_dir / "tmp"
    (conf_dir / "nginx.conf").write_text(
        f"{user}\ndaemon off;\nworker_processes 1;\npid {conf_dir}/nginx.pid;\n"
        f"error_log {conf_dir}/error.log;\nevents {{ worker_connections 64; }}\n"
        f"http {{ access_log off; client_body_temp_path {temp}/b; proxy_temp_path {temp}/p; "
        f"fastcgi_temp_path {temp}/f; uwsgi_temp_path {temp}/u; scgi_temp_path {temp}/s; "
        f"server {{ listen 127.0.0.1:{http_port}; root {www}; }} }}\n")
    saved = {k: os.environ.get(k) for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
                                            "AWS_SECRET_ACCESS_KEY", "AWS_REGION")}
    processes = []
    try:
        processes.append(subprocess.Popen([nginx_binary, "-e", str(conf_dir / "error.log"),
                                           "-p", str(conf_dir), "-c",
                                           str(conf_dir / "nginx.conf")]))
        processes.append(subprocess.Popen(
            [s3_binary, "--host", "127.0.0.1", "--port", str(s3_port), "--access-key", KEYS[0],
             "--secret-key", KEYS[1], str(root / "s3")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for(http_port, processes[0], "nginx")
        wait_for(s3_port, processes[1], "s3s-fs")
        os.environ.update(AWS_ENDPOINT_URL=f"http://127.0.0.1:{s3_port}",
                          AWS_ACCESS_KEY_ID=KEYS[0], AWS_SECRET_ACCESS_KEY=KEYS[1],
                          AWS_REGION="us-east-1")
        yield {"http": f"http://127.0.0.1:{http_port}", "www": www, "bucket": bucket}
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def epoch(source, **kwargs):
    loader = gpuprep.Loader(source, T, batch_size=4, shuffle=True, seed=3, shuffle_buffer=5,
                            backend="cpu", wait_warning=None, **kwargs)
    return [(np.asarray(images).tobytes(), np.asarray(labels).tolist())
            for images, labels in loader]


def test_http_and_s3_shards_give_the_local_batches(servers):
    local = epoch(str(servers["www"] / "train-{000000..000002}.tar"))
    assert sum(len(labels) for _, labels in local) == 3 * len(PHOTOS)
    for source in (servers["http"] + "/train-{000000..000002}.tar",
                   servers["http"] + "/train-000000.tar::" + servers["http"]
                   + "/train-{000001..000002}.tar",
                   [servers["http"] + f"/train-{s:06d}.tar" for s in range(3)],
                   f"s3://{BUCKET}/train-{{000000..000002}}.tar",
                   "pipe:cat " + str(servers["www"] / "train-{000000..000002}.tar")):
        assert epoch(source) == local, source


def write_index(servers):
    """The shards' index, written beside them in nginx's root and copied into the bucket."""
    index = servers["www"] / "train.json"
    written = gpuprep.write_shard_index(str(servers["www"] / "train-{000000..000002}.tar"),
                                        index)
    assert written == [(str(servers["www"] / f"train-{s:06d}.tar"), len(PHOTOS))
                       for s in range(3)]
    shutil.copy(index, servers["bucket"] / index.name)
    return index


def test_a_shard_index_gives_the_local_batches(servers):
    """The index (webdataset's wids JSON, its shards relative to it) read from disk, over HTTP
    and from S3 splits the shards without reading them, and gives the same batches."""
    import json
    index = write_index(servers)
    desc = json.loads(index.read_text())
    assert desc["wids_version"] == 1
    assert [s["url"] for s in desc["shardlist"]] == [f"train-{s:06d}.tar" for s in range(3)]
    local = epoch(str(servers["www"] / "train-{000000..000002}.tar"))
    for source in (str(index), "file:" + str(index), servers["http"] + "/train.json",
                   f"s3://{BUCKET}/train.json"):
        assert epoch(source) == local, source
    (servers["www"] / "bad.json").write_text('{"shardlist": []}')
    with pytest.raises(gpuprep.OptionsError, match="bad.json: no wids_version"):
        epoch(servers["http"] + "/bad.json")
    with pytest.raises(gpuprep.ReadError, match="nowhere.json"):
        epoch(servers["http"] + "/nowhere.json")


def test_missing_objects_and_unsafe_pipes_are_refused_by_name(servers, monkeypatch):
    missing = servers["http"] + "/train-000009.tar"
    with pytest.raises(gpuprep.ReadError, match="train-000009.tar.*not found"):
        epoch(missing)
    with pytest.raises(gpuprep.ReadError, match="s3://training/nothing.tar.*not found"):
        epoch(f"s3://{BUCKET}/nothing.tar")
    with pytest.raises(gpuprep.OptionsError, match="at most a day"):
        epoch(servers["http"] + "/train-000000.tar", timeout=0)
    monkeypatch.setenv("GPUPREP_SECURE", "1")
    with pytest.raises(gpuprep.OptionsError, match="GPUPREP_SECURE"):
        epoch("pipe:cat " + str(servers["www"] / "train-000000.tar"))


def test_a_loader_resumed_from_its_state_yields_the_uninterrupted_batches(servers, tmp_path):
    """torchdata's StatefulDataLoader protocol: a state taken after k batches (through JSON, as
    a checkpoint keeps it) given to a new loader yields, bit for bit, what the uninterrupted
    run yields after its k-th, then the epochs after; over files, an ImageFolder tree, local
    and remote shards, with set_epoch as a DDP loop calls it."""
    import json
    folder = tmp_path / "folder"
    for k, photo in enumerate(PHOTOS):
        (folder / ["cat", "dog"][k % 2]).mkdir(parents=True, exist_ok=True)
        shutil.copy(photo, folder / ["cat", "dog"][k % 2] / f"{k}.jpg")
    sources = {"files": PHOTOS * 2, "folder": str(folder),
               "shards": str(servers["www"] / "train-{000000..000002}.tar"),
               "http": servers["http"] + "/train-{000000..000002}.tar",
               "index": servers["http"] + "/" + write_index(servers).name}
    train = gpuprep.Transform().random_resized_crop(16).horizontal_flip(0.5).to_tensor()

    def make(source):
        return gpuprep.Loader(source, train, batch_size=2, shuffle=True, seed=5, rank=1,
                              world_size=2, shuffle_buffer=4, backend="cpu", wait_warning=None)

    def run(loader, epochs, stop=None):
        got = []
        for epoch in epochs:
            loader.set_epoch(epoch)
            for step, (images, labels) in enumerate(loader):
                got.append((epoch, np.asarray(images).tobytes(), np.asarray(labels).tolist()))
                if stop == (epoch, step):
                    return got, json.loads(json.dumps(loader.state_dict()))
        return got, None

    for name, source in sources.items():
        whole, _ = run(make(source), [0, 1])
        per_epoch = len(whole) // 2
        for k in (0, per_epoch // 2, per_epoch - 1):
            head, state = run(make(source), [0, 1], stop=(0, k))
            assert state["batches"] == k + 1, name
            resumed = make(source)
            resumed.load_state_dict(state)
            tail, _ = run(resumed, [0, 1])
            assert head + tail == whole, f"{name}: stopped after batch {k}"
    other = gpuprep.Loader(PHOTOS * 2, train, batch_size=2, shuffle=True, seed=6, rank=1,
                           world_size=2, backend="cpu")
    with pytest.raises(gpuprep.OptionsError, match="seed=5.*seed=6"):
        other.load_state_dict(make(PHOTOS * 2).state_dict())
    buffered = gpuprep.Loader(sources["shards"], train, batch_size=2, shuffle=True, seed=5,
                              rank=1, world_size=2, shuffle_buffer=9, backend="cpu")
    with pytest.raises(gpuprep.OptionsError, match="shuffle_buffer=4.*shuffle_buffer=9"):
        buffered.load_state_dict(make(sources["shards"]).state_dict())

    # A state saved after an epoch's loop ended resumes with the next epoch (without
    # set_epoch); one saved at its last batch, inside the loop, with the epoch's empty rest.
    source = sources["shards"]
    two = make(source)
    whole = [np.asarray(images).tobytes() for _ in range(2) for images, _ in two]
    first = make(source)
    ended = [np.asarray(images).tobytes() for images, _ in first]
    resumed = make(source)
    resumed.load_state_dict(json.loads(json.dumps(first.state_dict())))
    assert ended + [np.asarray(images).tobytes() for images, _ in resumed] == whole
    inside = make(source)
    for step, _ in enumerate(inside):
        if step == len(inside) - 1:
            state = inside.state_dict()
    resumed = make(source)
    resumed.load_state_dict(state)
    assert list(resumed) == []
    # Every rank makes as many batches: rank 0's state resumes rank 1.
    rank0 = gpuprep.Loader(source, train, batch_size=2, shuffle=True, seed=5, rank=0,
                           world_size=2, shuffle_buffer=4, backend="cpu", wait_warning=None)
    next(iter(rank0))
    rank1 = make(source)
    rank1.load_state_dict(rank0.state_dict())
    assert len(list(rank1)) == len(rank1) - 1


def test_the_remote_training_example_resumes_where_it_stopped(servers, tmp_path):
    """examples/python/remote_train.py under torchrun (two ranks, gloo on the CPU) over HTTP
    shards: stopped after 5 steps (its last checkpoint after step 4) and run again, every step
    after the checkpoint has the uninterrupted run's loss and labels."""
    pytest.importorskip("torch")
    import json
    import re
    import sys
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python",
                           "remote_train.py")
    source = servers["http"] + "/train-{000000..000002}.tar"

    def run(checkpoint, *more):
        out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                              "--nproc_per_node", "2", example, source, "--checkpoint",
                              str(checkpoint), "--epochs",
                              "2", "--batch", "2", "--size", "16", "--classes", "30",
                              "--every", "2", *more], capture_output=True, text=True, timeout=300,
                             env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
        assert out.returncode == 0, out.stderr[-3000:]
        lines = [json.loads(m) for m in re.findall(r"\{[^{}]*\}", out.stdout)]
        return {rank: [x for x in lines if x["rank"] == rank] for rank in (0, 1)}

    whole = run(tmp_path / "whole.pt")
    head = run(tmp_path / "run.pt", "--stop-after", "5")
    tail = run(tmp_path / "run.pt")
    for rank in (0, 1):
        assert head[rank] == whole[rank][:5]
        assert tail[rank][0]["step"] == 5  # resumed after the checkpoint at step 4
        assert tail[rank] == whole[rank][4:], rank
