"""Output paths and the atomic writer (files.py): a path spelled as a folder, a folder that os.access calls
writable but that takes no file, a write that fails for a reason other than a full disk, a symlink, and
run.py's default loss log beside params written to a special file, what a writer killed mid-write
leaves, and the lock a training run holds on its params. Each is refused up front or ends in
one line naming the file and the real reason; nothing the user made is replaced.

Run:  python -m pytest -q tests/test_files.py
"""
import errno
import os
import re
import shlex
import stat
import subprocess
import sys

import pytest
import torch

import run as driver
import submission.files as files_module
from submission import GPT, GPTConfig, TrainerConfig
from submission.files import DataError, atomic_torch_save, atomic_write_text, check_output_path

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def test_an_output_path_ending_in_a_slash_is_refused_up_front(tmp_path):
    """`--writing_params_path=out/pdir/` passed the check; training ran, then the write failed with
    'Not a directory ...; free some disk space'."""
    for spelled in (f"{tmp_path}/pdir/", f"{tmp_path}/pdir/."):
        with pytest.raises(DataError, match=r"the params path names a folder .*; give a file name$") as e:
            check_output_path(spelled, "params")
        assert "\n" not in str(e.value)
        with pytest.raises(DataError, match="names a folder, not a file; give a file name"):
            atomic_write_text(spelled, "x\n")  # realpath drops the slash: it would write a file named pdir
    assert os.listdir(tmp_path) == []


def _refuse_files(*args, **kwargs):
    raise PermissionError(errno.EACCES, "Permission denied")


def test_a_folder_that_takes_no_file_is_refused_up_front(tmp_path, monkeypatch):
    """os.access says yes to /sys, to NFS with root-squash, to a full quota; the check now makes (and
    removes) a file there, so the run stops before training instead of at its final write."""
    check_output_path(str(tmp_path / "p.params"), "params")
    assert os.listdir(tmp_path) == []  # the trial file is removed
    monkeypatch.setattr("submission.files.tempfile.mkstemp", _refuse_files)
    with pytest.raises(DataError, match=rf"p.params: no file can be made in the folder {tmp_path} \(Permission "
                                        r"denied\); pick another path for the params$"):
        check_output_path(str(tmp_path / "p.params"), "params")


def test_a_folder_the_user_cannot_write_is_named_up_front(tmp_path, monkeypatch):
    """A folder without write permission (os.access; root, which these tests may run as, may write anywhere,
    hence the stand-in) is named as the one to fix: the params' own folder, or the nearest folder there is
    when theirs is still to be made, nothing made in either."""
    real_access, folder = os.access, os.path.realpath(tmp_path)  # the check names folders as realpath has them
    monkeypatch.setattr(files_module.os, "access",
                        lambda path, mode: False if os.fspath(path) == folder else real_access(path, mode))
    with pytest.raises(DataError, match=rf"^{re.escape(str(tmp_path / 'p.params'))}: the folder {re.escape(folder)} "
                                        r"is not writable; pick another path for the params$"):
        check_output_path(str(tmp_path / "p.params"), "params")
    with pytest.raises(DataError, match=rf": the folder {re.escape(os.path.join(folder, 'new'))} cannot be made: "
                                        rf"{re.escape(folder)} is not writable; pick another path"):
        check_output_path(str(tmp_path / "new" / "p.params"), "params")
    assert os.listdir(tmp_path) == []
    tmp_path.chmod(0o555)  # the user's own folder made read-only (permission audit): the chmod that undoes it
    try:
        with pytest.raises(DataError, match=rf": the folder {re.escape(folder)} is not writable; make it writable "
                                            rf"\(chmod u\+w {re.escape(shlex.quote(folder))}\), or pick another "
                                            r"path for the params$"):
            check_output_path(str(tmp_path / "p.params"), "params")
    finally:
        tmp_path.chmod(0o755)


def test_an_existing_output_that_cannot_be_read_is_refused_up_front(tmp_path, monkeypatch):
    """(permission audit, non-root) params made 0000 (or another user's 0600) were taken for an empty file: the
    run trained, replaced them (the user's model lost), then failed to read its own params back for their card
    and exited 1 saying to check the file's permissions, as if nothing had changed. Root reads any file, so the
    refusal is made here."""
    params, log = tmp_path / "p.params", tmp_path / "p.params.log.jsonl"
    torch.save({"tok_emb.weight": torch.zeros(2, 2)}, params)
    log.write_text('{"step": 1}\n', encoding="utf-8")
    real = files_module.reads_as

    def unreadable(path):
        if os.path.basename(path) in ("p.params", "p.params.log.jsonl"):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real(path)
    monkeypatch.setattr(files_module, "reads_as", unreadable)
    kept = params.read_bytes()
    with pytest.raises(DataError, match=rf"^{re.escape(str(params))}: cannot be read \(Permission denied\), so this "
                                        r"run cannot tell whether it may replace it; make it readable \(chmod u\+r "
                                        rf"{re.escape(shlex.quote(str(params)))}\), or pick another path for the "
                                        r"params$"):
        check_output_path(str(params), "params", replaces=("params",))
    with pytest.raises(DataError, match=r"p.params.log.jsonl: cannot be read .*, or give --writing_params_path "
                                        r"another path \(the loss log goes beside it\)$"):
        check_output_path(str(log), "loss log", replaces=("log",), named_by="--writing_params_path")
    assert params.read_bytes() == kept
    check_output_path(str(tmp_path / "new.params"), "params", replaces=("params",))  # nothing there: nothing read


@pytest.mark.parametrize("owner", ["mine", "another user's"])
def test_a_write_protected_output_is_not_replaced(tmp_path, monkeypatch, owner):
    """(permission audit, non-root) params or predictions made read-only (chmod 444, as a student keeps a model
    that took hours) were renamed over without a word, and kept mode 444; the course's torch.save, an open() for
    writing, refuses them. Now refused up front, naming the mode and the fix (another user's file: no chmod of
    theirs to suggest). os.access says root may write anything, so the refusal is made here."""
    params = tmp_path / "p.params"
    torch.save({"tok_emb.weight": torch.zeros(2, 2)}, params)
    params.chmod(0o444)
    real_access = os.access
    monkeypatch.setattr(files_module.os, "access", lambda path, mode: False if os.fspath(path) == str(params)
                        and mode & os.W_OK else real_access(path, mode))
    if owner != "mine":
        monkeypatch.setattr(files_module.os, "geteuid", lambda: os.stat(params).st_uid + 1)
        says = (rf"^{re.escape(str(params))}: the file is another user's \(uid {os.stat(params).st_uid}\) and not "
                r"writable by you, so this run does not replace it; pick another path for the params$")
    else:
        says = (rf"^{re.escape(str(params))}: the file is write-protected \(mode 0444\), so this run does not replace "
                rf"it; make it writable \(chmod u\+w {re.escape(shlex.quote(str(params)))}\) to let it, or pick "
                r"another path for the params$")
    with pytest.raises(DataError, match=says):
        check_output_path(str(params), "params", replaces=("params",))
    monkeypatch.undo()
    params.chmod(0o644)  # writable again: replaced as before
    check_output_path(str(params), "params", replaces=("params",))


@pytest.mark.parametrize("letter,kind", [("i", "immutable"), ("a", "append-only")])
def test_an_immutable_or_append_only_output_is_refused_up_front(tmp_path, letter, kind):
    """A params file under `chattr +i` or `+a` cannot be renamed over, even by root: a run found it only at
    its final write, after the training (its model lost); now the check names the flag and how to clear it.
    Needs Linux, chattr and a file system with flags (ext4, btrfs, xfs; not tmpfs or overlayfs's upper layer
    on every kernel)."""
    import shutil
    params = tmp_path / "p.params"
    params.write_bytes(b"")
    if not sys.platform.startswith("linux") or not shutil.which("chattr"):
        pytest.skip("needs Linux's chattr")
    if subprocess.run(["chattr", f"+{letter}", str(params)], capture_output=True).returncode:
        pytest.skip(f"chattr +{letter} is refused here (not root, or a file system without flags)")
    try:
        with pytest.raises(DataError, match=rf"^{re.escape(str(params))}: the file is {kind}, so no run can replace "
                                            rf"it; clear that with `chattr -{letter} "
                                            rf"{re.escape(shlex.quote(str(params)))}` \(as root\), or pick another "
                                            rf"path for the params$"):
            check_output_path(str(params), "params", replaces=("params",))
        with pytest.raises(DataError, match="could not write it"):  # what it foresees: the write's rename refused
            atomic_write_text(str(params), "x")
    finally:
        subprocess.run(["chattr", f"-{letter}", str(params)], check=True)
    check_output_path(str(params), "params", replaces=("params",))  # flag cleared: replaced as before
    check_output_path(str(tmp_path / "new.params"), "params")  # a file not there yet has no flags


@pytest.mark.parametrize("flags,command,who", [
    (stat.UF_IMMUTABLE, "chflags nouchg", "its owner or root"), (stat.SF_IMMUTABLE, "chflags noschg", "root"),
    (stat.UF_APPEND, "chflags nouappnd", "its owner or root"), (stat.SF_APPEND, "chflags nosappnd", "root")])
def test_who_may_clear_a_flag_is_named(tmp_path, monkeypatch, flags, command, who):
    """chattr -i and -a need root (CAP_LINUX_IMMUTABLE), and chflags' system flags (schg, sappnd) root too; the
    message told the file's owner to clear them. Only macOS' and BSD's user flags (uchg, uappnd) are the owner's.
    st_flags is made up here (Linux's stat has none), so the chflags branch runs everywhere."""
    import types
    params = tmp_path / "p.params"
    params.write_bytes(b"")
    class FlaggedOs:  # files.py's os, with a stat that has st_flags
        stat = staticmethod(lambda path: types.SimpleNamespace(st_flags=flags))

        def __getattr__(self, name):
            return getattr(os, name)

    monkeypatch.setattr(files_module, "os", FlaggedOs())
    assert files_module._unreplaceable(str(params))[1:] == (f"{command} {shlex.quote(str(params))}", who)


def test_sys_is_refused_up_front():
    """The real case, where there is a /sys that refuses files (as root os.access says it is writable)."""
    if not os.path.isdir("/sys"):
        pytest.skip("no /sys here")
    try:
        check_output_path("/sys/vanilla.pretrain.params", "params")
    except DataError as e:
        assert "/sys/vanilla.pretrain.params: " in str(e) and "\n" not in str(e)
    else:
        pytest.fail("/sys took a file")


def test_a_write_that_fails_for_another_reason_says_so_in_one_line(tmp_path, monkeypatch):
    """mkstemp sat outside the writer's try: a PermissionError traceback after training, params lost;
    and every failure was told to free disk space."""
    p = tmp_path / "vanilla.pretrain.params"
    atomic_write_text(str(p), "old\n")
    monkeypatch.setattr("submission.files.tempfile.mkstemp", _refuse_files)
    with pytest.raises(DataError) as e:
        atomic_torch_save({"w": torch.zeros(2)}, str(p))
    message = str(e.value)
    assert message.startswith(f"{p}: could not write it (Permission denied)") and "\n" not in message
    assert "disk space" not in message and "pick another path" in message
    assert p.read_text() == "old\n"


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary_file(tmp_path):
    """A write that fails after some bytes (a full disk, a torch.save that raises) removes its part written:
    a training state is 40 MB a time, and a live writer's leftover is never swept up later (only a dead
    writer's is, by _remove_leftovers). The old file stays as it was, and the error is the one-line one."""
    from submission.files import atomic_write
    p = tmp_path / "vanilla.pretrain.params"
    atomic_write_text(str(p), "old\n")

    def disk_fills(f):
        f.write(b"x" * 4096)
        raise OSError(errno.ENOSPC, "No space left on device")

    def code_fails(f):
        f.write(b"x" * 4096)
        raise ValueError("not an OSError: raised as it is")

    with pytest.raises(DataError, match=r"could not write it \(No space left on device; "):
        atomic_write(str(p), disk_fills)
    with pytest.raises(ValueError, match="not an OSError"):
        atomic_write(str(p), code_fails)
    assert os.listdir(tmp_path) == ["vanilla.pretrain.params"] and p.read_text() == "old\n"


def test_a_temporary_file_gone_before_its_cleanup_keeps_the_first_error(tmp_path, monkeypatch):
    """A full disk, then the temporary file removed by someone else between the writer's check and its unlink:
    the unlink's FileNotFoundError replaced the one line that said the disk was full."""
    from submission.files import NoRoom, atomic_write
    p = tmp_path / "vanilla.pretrain.params"
    real_unlink = os.unlink

    def raced_unlink(path, *a, **k):
        if str(path).endswith(".tmp"):
            real_unlink(path)  # the other cleaner's
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
        return real_unlink(path, *a, **k)

    def disk_fills(f):
        f.write(b"x" * 4096)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files_module.os, "unlink", raced_unlink)
    with pytest.raises(NoRoom, match=r"vanilla.pretrain.params: could not write it \(No space left on device; "):
        atomic_write(str(p), disk_fills)
    assert os.listdir(tmp_path) == []


def test_a_special_file_that_fails_is_one_line():
    """/dev/full, written straight, raised a bare OSError. Were the special-file branch lost, the atomic
    path would replace /dev/full with a regular file (as root): the device is then put back, and the test fails."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    device = os.stat("/dev/full")
    try:
        with pytest.raises(DataError, match=r"^/dev/full: could not write to it \(No space left on device\); "
                                            r"pick another path$"):
            atomic_write_text("/dev/full", "Lisbon\n")
    finally:
        if not stat.S_ISCHR(os.lstat("/dev/full").st_mode):
            os.remove("/dev/full")
            os.mknod("/dev/full", device.st_mode, device.st_rdev)
            os.chmod("/dev/full", stat.S_IMODE(device.st_mode))  # mknod's mode is cut by the umask
            pytest.fail("atomic_write_text replaced /dev/full with a regular file (the device is restored)")


def test_a_symlinked_output_writes_its_target_and_stays_a_link(tmp_path):
    """os.replace swapped the link for a regular file and the file it named was never written."""
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "dev.predictions"
    target.write_text("old\n")
    link = tmp_path / "dev.predictions"
    link.symlink_to(os.path.join("real", "dev.predictions"))  # relative, as `ln -s` makes it
    atomic_write_text(str(link), "Lisbon\n")
    assert link.is_symlink() and target.read_text() == "Lisbon\n"
    params = tmp_path / "p.params"
    params.symlink_to(tmp_path / "real" / "p.params")  # dangling: the target is made
    atomic_torch_save({"w": torch.ones(2)}, str(params))
    assert params.is_symlink() and torch.equal(torch.load(tmp_path / "real" / "p.params")["w"], torch.ones(2))
    assert sorted(os.listdir(tmp_path / "real")) == ["dev.predictions", "p.params"]  # no temporary file left


def test_params_to_a_special_file_send_the_default_log_to_devnull(tmp_path):
    """--writing_params_path=/dev/null made a regular file /dev/null.log.jsonl in /dev (as root). Nor does
    such a run keep a training state (/dev/null.state: in /dev, which a user who is not root cannot write,
    so the check before the run refused a smoke test into /dev/null)."""
    argv = ["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=w"]
    args = driver.parse_args(argv + ["--writing_params_path=/dev/null"])
    tconf = driver.apply_overrides(TrainerConfig(), args)
    assert (tconf.log_path, tconf.state_path) == (os.devnull, None)
    driver.check_outputs(args)  # accepted, for any user: /dev itself is never written
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    args = driver.parse_args(argv + [f"--writing_params_path={fifo}"])
    tconf = driver.apply_overrides(TrainerConfig(), args)
    assert (tconf.log_path, tconf.state_path) == (os.devnull, None)
    args = driver.parse_args(argv + [f"--writing_params_path={tmp_path / 'p.params'}"])
    tconf = driver.apply_overrides(TrainerConfig(), args)
    params = tmp_path / "p.params"
    assert (tconf.log_path, tconf.state_path) == (f"{params}.log.jsonl", f"{params}.state")
    assert not os.path.exists("/dev/null.log.jsonl") and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_writer_killed_mid_write_leaves_a_temporary_file_that_a_later_write_removes(tmp_path):
    """SIGKILL cannot be caught: the temporary file stays (40 MB for a training state). A later write of the
    same file removes it once it is a minute old; a live writer's file, one written by another host, a fresh
    one, another target's and other names are kept."""
    from submission import files
    target = tmp_path / "p.params"
    atomic_torch_save({"w": torch.zeros(2)}, str(target))
    killed = ("import os, sys; sys.path.insert(0, sys.argv[1]); from submission.files import _atomic; "
              "_atomic(sys.argv[2], lambda f: (f.write(b'half a file'), f.flush(), os.kill(os.getpid(), 9)))")
    p = subprocess.Popen([sys.executable, "-c", killed, SRC, str(target)])
    assert p.wait(timeout=120) == -9
    leftover = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    assert len(leftover) == 1 and leftover[0].startswith(f"p.params.atomic-{files._HOST}-{p.pid}-")
    assert torch.equal(torch.load(target)["w"], torch.zeros(2))  # the killed write never replaced it
    atomic_torch_save({"w": torch.ones(2)}, str(target))
    assert leftover[0] in os.listdir(tmp_path)  # written a moment ago: its writer may be slow, not dead
    old = os.stat(tmp_path / leftover[0]).st_mtime - files.LEFTOVER_AGE
    os.utime(tmp_path / leftover[0], (old, old))
    dead, host = p.pid, files._HOST
    kept = [f"p.params.atomic-{host}-{os.getppid()}-abcdefgh.tmp",   # a writer that is still running
            f"p.params.atomic-{host}x-{dead}-abcdefgh.tmp",          # another host's writer
            f"p.params.atomic-{host}-{2 ** 40}-abcdefgh.tmp",        # no pid: os.kill overflows
            f"q.params.atomic-{host}-{dead}-abcdefgh.tmp",           # another target
            f"p.params.{dead}.abcdefgh.tmp", "p.params.notes.tmp"]   # not this writer's names
    for name in kept:
        (tmp_path / name).write_bytes(b"")
        os.utime(tmp_path / name, (old, old))
    atomic_torch_save({"w": torch.full((2,), 2.0)}, str(target))
    assert sorted(os.listdir(tmp_path)) == sorted(kept + ["p.params"])
    assert torch.equal(torch.load(target)["w"], torch.full((2,), 2.0))


def test_params_of_a_wrapped_model_are_saved_with_the_course_keys(tmp_path):
    """helper.train unwrapped one `.module` only, and Trainer.save_checkpoint the same: a program that
    passed torch.compile(model), or compile over DataParallel, wrote `_orig_mod.`-prefixed params,
    which the course's plain load_state_dict refuses. Every wrapper, nested any way, is taken off."""
    from submission import helper
    from submission.files import cpu_state_dict
    from submission.model import GPT, GPTConfig
    model = GPT(GPTConfig(10, 8, n_layer=1, n_head=2, n_embd=8))
    plain = model.state_dict()
    for wrapped in (torch.nn.DataParallel(model), torch.compile(model),
                    torch.compile(torch.nn.DataParallel(model)), torch.nn.DataParallel(torch.compile(model))):
        state = cpu_state_dict(wrapped)
        assert list(state) == list(plain)
        path = tmp_path / "w.params"

        class Ran:  # a trainer of the course's kind, that has run: helper.train saves after its train()
            def train(self):
                pass
        helper.train(wrapped, str(path), Ran())
        fresh = GPT(GPTConfig(10, 8, n_layer=1, n_head=2, n_embd=8))
        fresh.load_state_dict(torch.load(path, weights_only=True))  # the course's load: keys as they are
        assert all(torch.equal(fresh.state_dict()[k], v) for k, v in plain.items())


def test_a_refused_output_says_what_run_sh_users_can_change(tmp_path, monkeypatch):
    """Under run.sh, "give the params another path" cannot be done (the mode names the file and a second
    --writing_params_path is refused): the fix there is another OUT_DIR."""
    corpus = tmp_path / "vanilla.model.params"
    corpus.write_text("Where was Bo Li born?\tOslo\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"not the params an earlier run wrote, so it is not replaced; give the "
                                        r"params another path, or move the file away first$"):
        check_output_path(str(corpus), "params", replaces=("params",))
    monkeypatch.setenv("RUN_SH_MODE", "vanilla_finetune_without_pretrain")
    with pytest.raises(DataError, match=r"so it is not replaced; run.sh names the file: use another OUT_DIR, or "
                                        r"move the file away first$"):
        check_output_path(str(corpus), "params", replaces=("params",))


def test_windows_never_signals_a_writer_to_see_whether_it_lives(monkeypatch):
    """os.kill(pid, 0) is CTRL_C_EVENT on Windows: checking a leftover's writer sent a Ctrl-C."""
    from submission import files
    sent = []
    monkeypatch.setattr(files.os, "kill", lambda pid, sig: sent.append((pid, sig)))
    monkeypatch.setattr(files, "_WINDOWS", True)
    assert files._writer_alive(12345) is True and sent == []
    monkeypatch.setattr(files, "_WINDOWS", False)
    files._writer_alive(12345)
    assert sent == [(12345, 0)]


def test_a_resumed_run_on_an_apple_gpu_gets_its_random_stream_back(monkeypatch):
    """The training state kept the CPU's and CUDA's random streams only: on MPS a resumed run's dropout
    drew other masks than the uninterrupted run's."""
    from submission import resume
    stream = {"now": torch.tensor([1, 2, 3], dtype=torch.uint8)}
    mps = type("FakeMps", (), {"get_rng_state": staticmethod(lambda: stream["now"].clone()),
                                "set_rng_state": staticmethod(lambda s: stream.update(now=s.clone()))})
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch, "mps", mps, raising=False)
    state = resume.rng_state()
    assert torch.equal(state["mps"], torch.tensor([1, 2, 3], dtype=torch.uint8))
    stream["now"] = torch.tensor([9, 9, 9], dtype=torch.uint8)
    resume.set_rng_state(state)
    assert torch.equal(stream["now"], torch.tensor([1, 2, 3], dtype=torch.uint8))


def test_a_write_replaces_the_file_and_never_rewrites_it_in_place(tmp_path):
    """Readers see the old file or the whole new one: a reader that opened the predictions or the params
    before a write (the grader, a second evaluation) reads the old file whole, where a write in place
    would truncate it under the reader."""
    predictions, params = tmp_path / "dev.predictions", tmp_path / "p.params"
    atomic_write_text(str(predictions), "Lisbon\nOslo\n")
    atomic_torch_save({"w": torch.zeros(2)}, str(params))
    old_params = params.read_bytes()
    with open(predictions, "rb") as reader, open(params, "rb") as params_reader:
        atomic_write_text(str(predictions), "Paris\n")
        atomic_torch_save({"w": torch.ones(3)}, str(params))
        assert reader.read() == b"Lisbon\nOslo\n" and params_reader.read() == old_params
    assert predictions.read_bytes() == b"Paris\n" and torch.equal(torch.load(params)["w"], torch.ones(3))
    assert sorted(os.listdir(tmp_path)) == ["dev.predictions", "p.params"]


def test_an_output_over_an_input_named_another_way_is_refused(tmp_path, monkeypatch):
    """Finetuning that would write its params over the params it reads, named another way (`./x` for `x`,
    an absolute path for a relative one, a link): the pretrained params were replaced at the end."""
    monkeypatch.chdir(tmp_path)
    pretrained = tmp_path / "vanilla.pretrain.params"
    torch.save({"w": torch.zeros(2)}, pretrained)
    before = pretrained.read_bytes()
    os.symlink("vanilla.pretrain.params", tmp_path / "link.params")
    base = ["--function=finetune", "--variant=vanilla", "--pretrain_corpus_path=wiki.txt",
            "--finetune_corpus_path=train.tsv"]
    for reading, writing in (("vanilla.pretrain.params", "./vanilla.pretrain.params"),
                             (str(pretrained), "vanilla.pretrain.params"),
                             ("link.params", "vanilla.pretrain.params"), ("vanilla.pretrain.params", "link.params")):
        args = driver.parse_args(base + [f"--reading_params_path={reading}", f"--writing_params_path={writing}"])
        with pytest.raises(DataError, match=rf"^{re.escape(writing)}: the params would overwrite an input of this "
                                            r"run; write it elsewhere$"):
            driver.check_outputs(args)
    assert pretrained.read_bytes() == before


def test_a_zip_archive_that_torch_did_not_write_is_not_replaced_by_params(tmp_path):
    """torch.save writes a zip too, but one holding data.pkl: another zip (deliverables' submission.zip,
    given as --writing_params_path by a slip) is no earlier run's params and is not replaced."""
    import zipfile
    from submission.files import reads_as
    archive = tmp_path / "submission.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("vanilla.nopretrain.dev.predictions", "Lisbon\n")
        z.writestr("vanilla.model.params", b"PK\x03\x04 a params file")
    before = archive.read_bytes()
    assert reads_as(str(archive)) == "zip"
    with pytest.raises(DataError, match=r"submission.zip: is a zip archive, not the params an earlier run wrote, so "
                                        r"it is not replaced"):
        check_output_path(str(archive), "params", replaces=("params",))
    assert archive.read_bytes() == before
    params = tmp_path / "p.params"
    torch.save({"tok_emb.weight": torch.zeros(2, 2)}, params)
    assert reads_as(str(params)) == "torch"
    check_output_path(str(params), "params", replaces=("params",))  # an earlier run's params: replaced


def test_a_params_card_is_named_as_one_and_no_loss_log_replaces_it(tmp_path):
    """A card (<params>.card.json, one indented JSON object) read as "a loss log (JSON lines)": refusals called it
    one, and --log_path naming it replaced it as an earlier run's log. A log (one JSON object a line) still is one."""
    from submission.card import write_card
    from submission.files import reads_as
    params = tmp_path / "p.params"
    model = GPT(GPTConfig(10, 8, n_layer=1, n_head=2, n_embd=8))
    torch.save(model.state_dict(), params)
    write_card(str(params), model, {i: chr(65 + i) for i in range(10)}, "pretrain", 1)
    card = tmp_path / "p.params.card.json"
    before = card.read_bytes()
    assert reads_as(str(card)) == "card"
    for what, replaces in (("loss log", ("log",)), ("predictions", ("text",))):
        with pytest.raises(DataError, match=rf"card.json: is a params card \(JSON\), not the {what} an earlier run "
                                            r"wrote, so it is not replaced"):
            check_output_path(str(card), what, replaces=replaces)
    assert card.read_bytes() == before
    log = tmp_path / "log.jsonl"
    log.write_text('{"step": 1, "loss": 2.5}\n{"step": 2, "loss": 2.4}\n', encoding="utf-8")
    assert reads_as(str(log)) == "log"


def test_params_replace_params_and_states_states_but_no_checkpoint_of_the_users(tmp_path):
    """Any torch file passed as params was replaced: a checkpoint of the user's own ({'model': ..., 'epoch':
    3}, another model's weights) went without a word. Params of any GPT (another variant or size, keys
    of a compiled or DataParallel model) and a file cut short still are; a state only by a state."""
    from submission.files import torch_content
    gpt = GPT(GPTConfig(10, 8, n_layer=1, n_head=2, n_embd=8)).state_dict()
    files = {"vanilla": gpt, "wrapped": {"module." + k: v for k, v in gpt.items()},
             "checkpoint": {"model": gpt, "epoch": 3}, "resnet": {"conv1.weight": torch.zeros(2)},
             "state": {"settings": {}, "model": gpt, "optimizer": {}, "epoch": 2, "step": 4},
             "list": [torch.zeros(1)]}
    for name, obj in files.items():
        torch.save(obj, tmp_path / name)
    whole = (tmp_path / "vanilla").read_bytes()
    (tmp_path / "cut").write_bytes(whole[:len(whole) // 2])
    said = {name: torch_content(str(tmp_path / name)) for name in list(files) + ["cut"]}
    assert said == {"vanilla": "params", "wrapped": "params", "checkpoint": "other", "resnet": "other",
                    "state": "state", "list": "other", "cut": "damaged"}
    for name in ("vanilla", "wrapped", "cut"):
        check_output_path(str(tmp_path / name), "params", replaces=("params",))
    for name in ("checkpoint", "resnet", "state", "list"):
        with pytest.raises(DataError, match=rf"{name}: is (a torch file of another kind \(a checkpoint or another "
                                            rf"model's weights\)|a training state), not the params an earlier run "
                                            rf"wrote, so it is not replaced"):
            check_output_path(str(tmp_path / name), "params", replaces=("params",))
    check_output_path(str(tmp_path / "state"), "training state", replaces=("state",))
    with pytest.raises(DataError, match="vanilla: is params, not the training state an earlier run wrote"):
        check_output_path(str(tmp_path / "vanilla"), "training state", replaces=("state",))


def test_params_keep_the_metadata_torch_save_keeps(tmp_path):
    """The course saves model.state_dict() as it is, with its `_metadata` (each module's version, which
    load_state_dict hands to the modules): the params written here hold the same."""
    from submission import helper
    from submission.files import cpu_state_dict
    from submission.model import GPT, GPTConfig
    model = GPT(GPTConfig(10, 8, n_layer=1, n_head=2, n_embd=8))
    metadata = model.state_dict()._metadata
    assert metadata and cpu_state_dict(model)._metadata == metadata
    path = tmp_path / "w.params"

    class Ran:  # a trainer that has run: helper.train saves after its train()
        def train(self):
            pass
    helper.train(model, str(path), Ran())
    assert torch.load(path, weights_only=True)._metadata == metadata


def test_a_training_state_path_that_cannot_take_the_state_is_refused_up_front(tmp_path):
    """<writing_params_path>.state is written at an epoch's end: a folder there would fail the run only
    then, and another kind of file there (a corpus) would be replaced by a run given --restart."""
    params = tmp_path / "p.params"
    state = tmp_path / "p.params.state"
    argv = ["--function=pretrain", "--variant=vanilla", "--pretrain_corpus_path=w", f"--writing_params_path={params}"]
    state.mkdir()
    with pytest.raises(DataError, match=r"p.params.state: the training state path is a folder; move it away, or give "
                                        r"--writing_params_path another path \(the training state goes beside it\)$"):
        driver.check_outputs(driver.parse_args(argv))
    state.rmdir()
    state.write_text("Where was Bo Li born?\tOslo\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"p.params.state: is a corpus of questions, not the training "
                                        r"state an earlier run wrote, so it is not replaced"):
        driver.check_outputs(driver.parse_args(argv + ["--restart"]))
    assert state.read_text(encoding="utf-8") == "Where was Bo Li born?\tOslo\n" and not params.exists()


def test_a_write_reaches_the_disk_before_it_replaces_the_file(tmp_path, monkeypatch):
    """The temporary file is flushed and fsynced, whole, before os.replace gives it the target's name: after a
    power cut the name holds the old file or the whole new one, never an empty or partial file."""
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.fstat(fd).st_size))
        return real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", os.path.basename(str(dst))))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    atomic_write_text(str(tmp_path / "p.predictions"), "Lisbon\nOslo\n")
    assert events == [("fsync", len("Lisbon\nOslo\n")), ("replace", "p.predictions")]
    assert (tmp_path / "p.predictions").read_text(encoding="utf-8") == "Lisbon\nOslo\n"


def test_a_path_ending_in_dot_dot_is_refused_as_a_folder(tmp_path):
    """`out/sub/..` names the folder out: realpath makes it `out`, and where out is not there yet the write made a
    file of that name."""
    spelled = f"{tmp_path}/out/sub/.."
    with pytest.raises(DataError, match=r"names a folder, not a file; give a file name$"):
        atomic_write_text(spelled, "x\n")
    with pytest.raises(DataError, match=r"the params path names a folder \(it ends in '\.\.'\); give a file name$"):
        check_output_path(spelled, "params")
    assert os.listdir(tmp_path) == []


def test_a_users_torch_file_with_settings_is_no_training_state(tmp_path):
    """A training state has its settings, model, optimizer and epoch: a checkpoint of the user's own with settings
    and weights alone is not one, and a training state does not replace it."""
    from submission.files import torch_content
    gpt = GPT(GPTConfig(10, 8, n_layer=1, n_head=2, n_embd=8)).state_dict()
    path = tmp_path / "mine.params.state"
    torch.save({"settings": {"lr": 0.1}, "model": gpt}, path)
    assert torch_content(str(path)) == "other"
    with pytest.raises(DataError, match=r"mine.params.state: is a torch file of another kind .*, not the training "
                                        r"state an earlier run wrote, so it is not replaced"):
        check_output_path(str(path), "training state", replaces=("state",))


def refused(params):
    """True when a training_lock on `params` is refused (another run holds it)."""
    from submission.locks import training_lock
    try:
        with training_lock(str(params)):
            return False
    except DataError as e:
        assert "is training into it now" in str(e)
        return True


def test_a_lock_left_by_a_killed_run_is_taken_and_then_holds(tmp_path):
    """A run killed outright leaves <params>.lock with its pid; the next run wrote its own pid at the
    offset of its read, after NULs, and a third run then took the file for a user's and trained into
    the same params unlocked."""
    from submission.locks import training_lock
    lock = tmp_path / "a.params.lock"
    lock.write_text("4194303\n", encoding="ascii")  # a dead run's pid
    with training_lock(str(tmp_path / "a.params")):
        assert lock.read_text(encoding="ascii") == f"{os.getpid()}\n"
        assert refused(tmp_path / "a.params")
    assert not lock.exists()
    lock.write_bytes(b"\x00" * 8 + b"4194303\n")  # what that version left: taken as a lock file too
    with training_lock(str(tmp_path / "a.params")):
        assert refused(tmp_path / "a.params")


def test_a_link_or_a_fifo_at_the_lock_files_name_is_no_lock_and_left_as_it_is(tmp_path):
    """(security audit) A link laid at <params>.lock had its target, an empty file, written with the pid and
    then removed (a dangling one made its target for the run); a FIFO there stopped the run in an "Illegal seek"
    traceback. Neither is a lock file: the run trains unlocked and leaves them (and what a link names) alone."""
    from submission.locks import training_lock
    victim = tmp_path / "victim.txt"
    victim.write_text("")
    os.symlink(victim, tmp_path / "a.params.lock")
    os.symlink(tmp_path / "nowhere.txt", tmp_path / "b.params.lock")
    os.mkfifo(tmp_path / "c.params.lock")
    for name in ("a", "b", "c"):
        with training_lock(str(tmp_path / f"{name}.params")) as locked:
            assert locked is False
    assert victim.read_text() == "" and not (tmp_path / "nowhere.txt").exists()
    assert (tmp_path / "a.params.lock").is_symlink() and (tmp_path / "b.params.lock").is_symlink()
    assert stat.S_ISFIFO(os.lstat(tmp_path / "c.params.lock").st_mode)


def test_a_params_file_named_through_a_link_is_locked_as_the_file_it_names(tmp_path):
    """Two runs into one params file, one naming it through a link (runs/latest.params -> runs/a.params): both
    write that file (an atomic write replaces the link's target), so they take one lock, on the target's
    <params>.lock, and the second is refused."""
    from submission.locks import training_lock
    (tmp_path / "a.params").write_bytes(b"")
    (tmp_path / "latest.params").symlink_to("a.params")
    with training_lock(str(tmp_path / "latest.params")):
        assert (tmp_path / "a.params.lock").is_file() and not (tmp_path / "latest.params.lock").exists()
        assert refused(tmp_path / "a.params")


def test_a_lock_taken_on_a_full_disk_holds_without_its_pid(tmp_path, monkeypatch):
    """A full disk as a training run (or the demo) starts: writing its pid into the lock file failed with a
    traceback (OSError: No space left on device) before any work. The flock needs no space: the run holds it,
    and a second run is refused without a pid."""
    import errno
    from submission.locks import training_lock

    def full(fd, data, offset):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "pwrite", full)
    with training_lock(str(tmp_path / "a.params")) as locked:
        assert locked and (tmp_path / "a.params.lock").read_bytes() == b""
        with pytest.raises(DataError, match=r"a.params: another run is training into it now \("):
            with training_lock(str(tmp_path / "a.params")):
                pass
    assert not (tmp_path / "a.params.lock").exists()


def another_users_lock(monkeypatch, readable=True):
    """os.open as a user who may not write (nor, unless `readable`, read) the lock files there: they are
    another user's, made 0644 (0600) under that user's umask. Root opens any file, so the refusal is made here."""
    real_open = os.open

    def as_another_user(path, flags, *args, **kwargs):
        if str(path).endswith(".lock") and os.path.exists(path) and (flags & (os.O_WRONLY | os.O_RDWR) or not readable):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)
    monkeypatch.setattr(os, "open", as_another_user)


def test_another_users_lock_excludes_this_run_too(tmp_path, monkeypatch, capsys):
    """(permission audit, non-root) A second user's run into a shared folder could not open the first user's lock
    file (0644) for writing, and trained unlocked without a word: the two runs' params, card and log ended mixed.
    Opened for reading it flocks all the same: the run is refused while the other holds it, and takes it after."""
    from submission.locks import training_lock
    params = tmp_path / "a.params"
    with training_lock(str(params)):  # the other user's run
        another_users_lock(monkeypatch)
        with pytest.raises(DataError, match=rf"a.params: another run \(pid {os.getpid()}\) is training into it now"):
            with training_lock(str(params)):
                pass
        monkeypatch.undo()
    (tmp_path / "a.params.lock").write_text("4194303\n", encoding="ascii")  # its run was killed
    another_users_lock(monkeypatch)
    with training_lock(str(params)) as locked:
        assert locked
        monkeypatch.undo()
        assert refused(params)
    assert capsys.readouterr().err == ""


def test_no_lock_where_none_can_be_made_is_silent(tmp_path, monkeypatch, capsys):
    """A params folder the user cannot write in (no lock file yet): the lock's create is refused. The read-only
    retry for another user's lock then found no file and tried again 100 times, ending in a note that the lock
    "kept changing" (other runs starting and stopping), before the output check's line; now no lock, no note."""
    from submission.locks import training_lock
    real_open = os.open

    def read_only_folder(path, flags, *args, **kwargs):
        if str(path).endswith(".lock") and flags & os.O_CREAT and not os.path.exists(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)
    monkeypatch.setattr(os, "open", read_only_folder)
    with training_lock(str(tmp_path / "a.params")) as locked:
        assert locked is False
    assert capsys.readouterr().err == ""


def test_a_lock_file_that_cannot_be_opened_at_all_is_said(tmp_path, monkeypatch, capsys):
    """Another user's lock made 0600 (or a stale one of root's): the run cannot flock it and trains unlocked,
    now with a note that says so and how to clear it, instead of silently."""
    from submission.locks import training_lock
    (tmp_path / "a.params.lock").write_text("4194303\n", encoding="ascii")
    another_users_lock(monkeypatch, readable=False)
    with training_lock(str(tmp_path / "a.params")) as locked:
        assert locked is False
    err = capsys.readouterr().err
    assert re.fullmatch(r"note: \S*a.params.lock cannot be opened \(Permission denied\), so this run is not guarded "
                        r"against a second run into the same files; remove that file if no run is using it\n", err)


def run_a_ends_as_b_opens(tmp_path, monkeypatch, then=None):
    """Run A holds the lock of tmp_path/a.params; the next os.open of a lock file (run B's) is followed by A's
    end, which removes the file, and then by `then()` (another run making the file anew)."""
    from submission.locks import training_lock
    first = training_lock(str(tmp_path / "a.params"))
    first.__enter__()  # run A
    real_open = os.open

    def open_then_a_ends(path, *args, **kwargs):
        fd = real_open(path, *args, **kwargs)
        if str(path).endswith(".lock"):
            monkeypatch.setattr(os, "open", real_open)
            first.__exit__(None, None, None)
            if then:
                then()
        return fd

    monkeypatch.setattr(os, "open", open_then_a_ends)


@pytest.mark.parametrize("replaced", [False, True])
def test_a_lock_file_removed_or_replaced_between_a_runs_open_and_its_flock_is_not_the_one_it_holds(
        tmp_path, monkeypatch, replaced):
    """Run B opens the lock file, run A ends (removing it), B's flock then succeeds on the removed file:
    a lock no later run sees, so a run C trained alongside B. With `replaced`, a new file takes the name
    (run C starting) before B's flock (mutation audit). B must hold the file at the path."""
    from submission.locks import training_lock
    params, lock = tmp_path / "a.params", tmp_path / "a.params.lock"
    run_a_ends_as_b_opens(tmp_path, monkeypatch,
                          then=(lambda: lock.write_text("4194303\n", encoding="ascii")) if replaced else None)
    with training_lock(str(params)):  # run B
        assert lock.read_text(encoding="ascii") == f"{os.getpid()}\n"
        assert refused(params)  # run C
    assert not lock.exists()


def test_a_file_of_the_users_named_as_the_lock_is_left_as_it_is(tmp_path):
    """<params>.lock holding anything but a pid is the user's file, not a lock: the run trains unlocked and
    neither writes its pid over the file nor removes it when it ends (a lock file of its own it removes)."""
    from submission.locks import training_lock
    lock = tmp_path / "a.params.lock"
    lock.write_text("notes of mine\n", encoding="utf-8")
    with training_lock(str(tmp_path / "a.params")) as locked:
        assert locked is False and lock.read_text(encoding="utf-8") == "notes of mine\n"
    assert lock.read_text(encoding="utf-8") == "notes of mine\n"


def test_a_run_into_a_folder_not_yet_there_holds_the_lock_and_leaves_no_empty_folder(tmp_path):
    """The folder of the params was made by the trainer, after training_lock had found no folder to lock
    in: a second run took the lock, and its --resume the live run's state. The lock makes the folder;
    a run that ends leaving it empty (a bad input) removes what it made."""
    from submission.locks import training_lock
    params = tmp_path / "new" / "deeper" / "a.params"
    with training_lock(str(params)):
        assert (tmp_path / "new" / "deeper" / "a.params.lock").exists()
        assert refused(params)
    assert os.listdir(tmp_path) == []
    with training_lock(str(params)):
        params.write_bytes(b"trained")
    assert os.listdir(tmp_path / "new" / "deeper") == ["a.params"]


def test_a_new_file_gets_the_umasks_mode_and_a_replaced_file_keeps_its_own(tmp_path):
    """mkstemp makes 0600 files: a new output gets what open() would give it (0666 less the umask); a
    replaced one its own mode, where it was made 0666 less the umask, widening params a user had made 0600."""
    from submission.files import _umask
    previous = os.umask(0o027)
    try:
        assert _umask() == 0o027
        atomic_write_text(str(tmp_path / "new.txt"), "a\n")
        assert stat.S_IMODE(os.stat(tmp_path / "new.txt").st_mode) == 0o640
        private = tmp_path / "private.params"
        private.write_text("old\n")
        os.chmod(private, 0o600)
        atomic_write_text(str(private), "new\n")
        assert private.read_text() == "new\n" and stat.S_IMODE(os.stat(private).st_mode) == 0o600
    finally:
        os.umask(previous)


def test_a_file_system_without_flock_trains_unlocked_and_leaves_no_lock_file(tmp_path, monkeypatch):
    """flock fails with ENOLCK on NFS without lockd (ENOSYS on Lustre without -o flock): the run stopped in
    a traceback; as where there is no fcntl, it trains unlocked."""
    import fcntl
    from submission.locks import training_lock

    def no_flock(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    params = tmp_path / "new" / "a.params"
    with training_lock(str(params)):
        assert os.listdir(tmp_path / "new") == []
        params.write_bytes(b"trained")
    assert os.listdir(tmp_path / "new") == ["a.params"]


def test_a_folder_removed_before_the_lock_file_is_opened_is_made_again(tmp_path, monkeypatch):
    """Run A made the params folder, stopped at a bad input and removed it, just as run B (which found the
    folder there) opened its lock file there: B trained unlocked, and a run C then locked beside it."""
    from submission.locks import training_lock
    params = tmp_path / "out" / "a.params"
    params.parent.mkdir()
    real_open = os.open

    def folder_gone_first(path, *args, **kwargs):
        if str(path).endswith(".lock"):
            monkeypatch.setattr(os, "open", real_open)
            os.rmdir(params.parent)  # run A's clean-up
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", folder_gone_first)
    with training_lock(str(params)):  # run B
        assert (tmp_path / "out" / "a.params.lock").exists() and refused(params)  # run C


def test_a_params_folder_that_cannot_be_made_gets_no_lock_and_no_note(tmp_path, monkeypatch, capsys):
    """OUT_DIR=/results (a folder above it not writable): the lock tried 100 times to make the folder and
    then said "params.lock kept changing under this run", a false note before the real error."""
    from submission.locks import training_lock

    def refused_here(path, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(os, "makedirs", refused_here)
    params = tmp_path / "not-mine" / "sub" / "a.params"
    with training_lock(str(params)) as locked:
        assert locked is False
    assert capsys.readouterr().err == "" and not (tmp_path / "not-mine").exists()


def test_without_flock_a_lock_file_that_was_there_is_left_and_setuid_bits_are_not_kept(tmp_path, monkeypatch):
    """Mutation audit: where flock fails, only an empty lock file this run made is removed (one holding a pid
    was there before it, another run's); and a replaced file keeps its permissions, not a setuid bit."""
    import fcntl
    from submission.locks import training_lock

    def no_flock(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    lock = tmp_path / "a.params.lock"
    lock.write_text("4194303\n", encoding="ascii")
    with training_lock(str(tmp_path / "a.params")) as locked:
        assert locked is False
    assert lock.read_text(encoding="ascii") == "4194303\n"
    marked = tmp_path / "old.params"
    marked.write_text("old\n")
    os.chmod(marked, 0o4640)
    atomic_write_text(str(marked), "new\n")
    assert marked.read_text() == "new\n" and stat.S_IMODE(os.stat(marked).st_mode) == 0o640


def test_the_remake_command_names_run_sh_as_typed_from_here_and_the_data_dir_in_use(tmp_path, monkeypatch):
    """Mutation audit of params._make_with: from the repo or from src/ (the course's place of run.sh) it is
    ./run.sh; from a folder outside the repo, run.sh's whole path (not a climb of ../); and the DATA_DIR this
    run has is kept, so the params are remade with the same corpus."""
    from submission import params
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    monkeypatch.delenv("DATA_DIR", raising=False)
    for here in (root, os.path.join(root, "src")):
        monkeypatch.chdir(here)
        assert params._run_sh() == "./run.sh", here
    monkeypatch.chdir(tmp_path)
    assert params._run_sh() == shlex.quote(os.path.join(root, "run.sh"))
    monkeypatch.chdir(root)
    monkeypatch.setenv("DATA_DIR", "my data")
    made = params._make_with(os.path.join(root, "src", "submission", "vanilla.pretrain.params"))
    assert made.startswith("DATA_DIR='my data' ./run.sh vanilla_pretrain"), made


def test_a_target_in_use_on_windows_is_replaced_once_it_is_free(tmp_path, monkeypatch):
    """On Windows an antivirus scan, the indexer or OneDrive holding the old file a moment refuse the rename
    (PermissionError): the write of params that hours of training made failed on it. There it tries again a few
    times (3 s in all) before it says so; elsewhere a refused rename is final at once, and the old file stays."""
    target = tmp_path / "m.params"
    target.write_text("old")
    real, calls, waits = os.replace, [], []

    def held_twice(src, dst):
        calls.append(dst)
        if len(calls) <= 2:
            raise PermissionError(errno.EACCES, "The process cannot access the file because it is being used")
        real(src, dst)

    monkeypatch.setattr(files_module.os, "replace", held_twice)
    monkeypatch.setattr(files_module.time, "sleep", waits.append)
    monkeypatch.setattr(files_module, "_WINDOWS", True)
    atomic_write_text(str(target), "new")
    assert target.read_text() == "new" and len(calls) == 3 and waits == [0.1, 0.2]

    def held(src, dst):
        calls.append(dst)
        raise PermissionError(errno.EACCES, "The process cannot access the file because it is being used")

    monkeypatch.setattr(files_module.os, "replace", held)
    for windows, tries in ((True, 6), (False, 1)):
        monkeypatch.setattr(files_module, "_WINDOWS", windows)
        calls.clear()
        with pytest.raises(DataError, match="being used.*the previous file, if any, is unchanged"):
            atomic_write_text(str(target), "newer")
        assert len(calls) == tries and target.read_text() == "new" and os.listdir(tmp_path) == ["m.params"]


def test_a_dead_writer_s_leftover_is_removed_before_a_write_that_it_leaves_no_room_for(tmp_path, monkeypatch):
    """A training state killed mid-save left 40 MB beside the params; the next save found the disk full and said
    "free some disk space", the leftover kept: the sweep ran only after a write that worked."""
    from submission import files
    target = tmp_path / "p.params.state"
    leftover = tmp_path / f"p.params.state.atomic-{files._HOST}-{2 ** 22 + 1}-abcdefgh.tmp"  # above pid_max
    leftover.write_bytes(b"x" * 4096)
    old = leftover.stat().st_mtime - files.LEFTOVER_AGE
    os.utime(leftover, (old, old))
    monkeypatch.setattr(files, "_writer_alive", lambda pid: False)

    def fits_once_the_leftover_is_gone(f):
        if leftover.exists():
            raise OSError(errno.ENOSPC, "No space left on device")
        f.write(b"state")
    files.atomic_write(str(target), fits_once_the_leftover_is_gone)
    assert os.listdir(tmp_path) == ["p.params.state"] and target.read_bytes() == b"state"


@pytest.mark.skipif(not hasattr(os, "statvfs"), reason="no statvfs here")
def test_no_inode_left_is_named_as_such_not_as_a_full_disk(tmp_path, monkeypatch):
    """On a filesystem out of inodes (ext4 `-N`, a small tmpfs's nr_inodes) with space free, ENOSPC said "5.9 MiB
    free there ... free some disk space", and the check before a run "no file can be made ... (No space left on
    device)". Both now name the inodes and `df -i`."""
    from submission import files
    real = os.statvfs

    class NoInodes:
        def __init__(self, st):
            self.st = st

        def __getattr__(self, name):
            return 0 if name == "f_favail" else getattr(self.st, name)
    monkeypatch.setattr(files.os, "statvfs", lambda path: NoInodes(real(path)))

    def no_entry(f):
        raise OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(DataError) as e:
        files.atomic_write(str(tmp_path / "p.params"), no_entry)
    assert "but no inode left for a new file (df -i)" in str(e.value) and "disk space" not in str(e.value)
    assert "remove some files from that filesystem or pick another path" in str(e.value)

    def mkstemp(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(files.tempfile, "mkstemp", mkstemp)
    with pytest.raises(DataError, match=r"no file can be made in the folder .*\(No space left on device, no inode "
                                        r"left for one: df -i\)"):
        check_output_path(str(tmp_path / "p.params"), "params")


@pytest.mark.skipif(os.name == "nt", reason="no RLIMIT_FSIZE on Windows")
def test_the_file_size_limit_is_named_at_the_write_and_before_the_run(tmp_path):
    """Under `ulimit -f 100` torch.save's zip writer stopped with no errno, and the message said "48,672.5 MiB
    free there ... free some disk space"; a plain write said "File too large ...; pick another path". A run
    whose params would pass the limit is refused before it trains (a training state, which a short run never
    saves, only noted), and a write that reaches it names it."""
    code = ("import resource, sys; sys.path.insert(0, sys.argv[1]); import torch\n"
            "from submission.files import DataError, atomic_torch_save, atomic_write_text, check_room\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))\n"
            "for write in (lambda: atomic_torch_save({'w': torch.zeros(40000)}, sys.argv[2]),\n"
            "              lambda: atomic_write_text(sys.argv[2] + '.txt', 'x' * 100000),\n"
            "              lambda: print(check_room(sys.argv[2], {'params': 60000}, state=480000)),\n"
            "              lambda: check_room(sys.argv[2], {'params': 160000}, state=480000)):\n"
            "    try:\n"
            "        write()\n"
            "    except DataError as e:\n"
            "        print(e)\n")
    target = tmp_path / "p.params"
    out = subprocess.run([sys.executable, "-c", code, SRC, str(target)], capture_output=True, text=True, timeout=120)
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and len(lines) == 4, out.stdout + out.stderr
    for line in lines[:2]:
        assert "; the file size limit is 64 KiB (ulimit -f)); " in line and "disk space" not in line, line
        assert line.endswith("raise the limit (ulimit -f unlimited) in the shell that runs it"), line
    assert lines[2].startswith(f"{target}: a training state of up to 469 KiB is above the file size limit of 64 KiB "
                               f"(ulimit -f): a save that finds no room is a note, and the run goes on saving no "
                               f"more"), lines[2]
    assert lines[3] == (f"{target}: this run writes files of up to 157 KiB (params 157 KiB), above the file size "
                        f"limit of 64 KiB (ulimit -f); raise it (ulimit -f unlimited) first")
    assert os.listdir(tmp_path) == []


def test_a_run_whose_outputs_cannot_fit_is_refused_before_it_trains(tmp_path, monkeypatch, capsys):
    """The check before a run made an empty trial file, which a full disk still takes: a training run on a disk
    with a few KiB free trained every epoch, then lost it all at the params write. check_room compares the free
    space with what the run writes as it ends (run.output_sizes: the params, the loss log) and refuses it when
    they cannot fit; a training state, saved only once a run has trained a while, that cannot fit besides is a
    note (less an interrupted run's state and partial log that a --resume replaces: a first version refused a
    resume that fitted). Dead writers' temporary files are removed first (it counted them as used, and no write
    came to remove them). Every torchrun process checks (rank 1 waited 30 s for rank 0, which had stopped)."""
    import collections
    from submission import files, resume
    usage = collections.namedtuple("usage", "total used free")
    free = {"bytes": 0}
    monkeypatch.setattr(files.shutil, "disk_usage", lambda path: usage(2 ** 30, 0, free["bytes"]))
    # the estimates hold the files a run writes: params, and a state of a run of 40 steps with its log lines
    model = GPT(GPTConfig(10, 8, n_layer=1, n_head=2, n_embd=8))
    opt = torch.optim.AdamW(model.parameters())
    model(torch.zeros(1, 4, dtype=torch.long), torch.zeros(1, 4, dtype=torch.long))[1].backward()
    opt.step()
    line = '{"step": 14950, "epoch": 650, "tokens": 1913600000, "loss": 0.123456, "lr": 0.000123456789, "time": 1.5}'
    atomic_torch_save(files.cpu_state_dict(model), str(tmp_path / "p"))
    resume.save(str(tmp_path / "s"), model=model, optimizer=opt, settings={}, epoch=1, step=40, tokens=1,
                best_loss=1.0, elapsed=1.0, log_lines=[line] * 40)
    sizes = driver.output_sizes(model, 40, True, True)
    assert list(sizes) == ["params", "loss log", "training state"] and sizes["loss log"] >= 40 * (len(line) + 1)
    for name, what in (("p", "params"), ("s", "training state")):
        written = os.path.getsize(tmp_path / name)  # (a little more: torch.save's headers are estimated high)
        assert written <= sizes[what] <= 1.3 * written + 16 * 1024, (name, written, sizes[what])
        os.remove(tmp_path / name)
    assert list(driver.output_sizes(model, 40, False, False)) == ["params"]
    sizes, state = {"params": 3 * 2 ** 20, "loss log": 2 ** 20}, 8 * 2 ** 20
    out = tmp_path / "new" / "p.params"  # its folder is made by the run: the nearest one is looked at
    free["bytes"] = 4 * 2 ** 20 - 1  # no room for what the run writes as it ends: refused
    with pytest.raises(DataError, match=rf"^{re.escape(str(out))}: this run writes about 4,096 KiB there \(params "
                                        rf"3,072 KiB, loss log 1,024 KiB\), and {re.escape(str(tmp_path))} has 4,096 "
                                        rf"KiB free; free some disk space or pick another path$"):
        files.check_room(str(out), sizes, state)
    monkeypatch.setenv("RUN_SH_MODE", "vanilla_pretrain")
    with pytest.raises(DataError, match="free some disk space or use another OUT_DIR$"):
        files.check_room(str(out), sizes, state)
    monkeypatch.delenv("RUN_SH_MODE")
    assert files.check_room(os.devnull, sizes, state) is None  # a special file: nothing to check
    # room for the end but not for the states besides (two at a save from the second on, with the log): a note
    free["bytes"] = 4 * 2 ** 20
    assert files.check_room(str(out), sizes, state) == (
        f"{out}: {tmp_path} has 4,096 KiB free, room for the 4,096 KiB this run writes as it ends but not for its "
        f"training states as well (up to 8,192 KiB, two at a save): a save that finds no room is a note, and the run "
        f"goes on saving no more (any state saved before is kept); free some disk space for them, or give "
        f"--state_every a time longer than the run (none is saved)")
    free["bytes"] = 17 * 2 ** 20 - 1  # two states and the log: 8 + 8 + 1 MiB
    assert files.check_room(str(out), sizes, state) is not None
    free["bytes"] += 1
    assert files.check_room(str(out), sizes, state) is None
    free["bytes"] = 9 * 2 ** 20  # a --resume replaces the interrupted run's state: one new state and the log
    assert files.check_room(str(out), sizes, state, replaced=8 * 2 ** 20) is None
    free["bytes"] -= 1
    assert ", two at a save, less the 8,192 KiB of the interrupted run's)" in files.check_room(str(out), sizes, state,
                                                                                              8 * 2 ** 20)
    assert os.listdir(tmp_path) == []
    # a dead writer's temporary file is removed before the space is looked at, as a write would remove it
    (tmp_path / "new").mkdir()
    leftover = tmp_path / "new" / f"p.params.state.atomic-{files._HOST}-{2 ** 22 + 1}-abcdefgh.tmp"
    leftover.write_bytes(b"x")
    old = leftover.stat().st_mtime - files.LEFTOVER_AGE
    os.utime(leftover, (old, old))
    monkeypatch.setattr(files, "_writer_alive", lambda pid: False)
    files.check_room(str(out), sizes, targets=[str(out), f"{out}.state"])
    assert os.listdir(tmp_path / "new") == []
    # run.py checks before its first step, in every torchrun process: with the disk as full, no trainer is reached
    monkeypatch.setenv("GPT_NUM_THREADS", "1")
    monkeypatch.setattr(driver.helper, "train", lambda *a, **k: pytest.fail("trained on a full disk"))
    (tmp_path / "wiki.txt").write_text("Ada Quill was born in Lisbon.\nBo Li was born in Oslo.\n", encoding="utf-8")
    argv = ["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
            f"--writing_params_path={out}", "--max_epochs", "2", "--n_layer", "1", "--n_embd", "16",
            "--block_size", "32"]
    free["bytes"] = 4096
    for rank in (0, 1):
        monkeypatch.setattr(driver, "is_main_process", lambda: rank == 0)
        with pytest.raises(DataError, match=r"p\.params: this run writes about [\d,]+ KiB there \(params [\d,]+ KiB, "
                                            r"loss log 1 KiB\), and .* has 4 KiB free; free some disk space"):
            driver.main(argv)
    assert sorted(os.listdir(tmp_path)) == ["new", "wiki.txt"] and os.listdir(tmp_path / "new") == []
    # --resume: the interrupted run's state and partial log are replaced, so their bytes count as free
    monkeypatch.setattr(driver, "is_main_process", lambda: True)
    model = driver.build_model(driver.parse_args(argv), driver.CharCorruptionDataset(
        (tmp_path / "wiki.txt").read_text(), 32))
    sizes = driver.output_sizes(model, 2, True, True)
    (tmp_path / "new" / "p.params.state").write_bytes(b"x" * sizes["training state"])
    args = driver.parse_args(argv + ["--resume"])
    trainer = type("T", (), {"train_dataset": [0] * 2})()
    free["bytes"] = max(sizes["params"], sizes["training state"]) + sizes["loss log"]  # a new state beside the old
    driver.check_room_for(args, model, trainer, 2, 128)
    assert "note" not in capsys.readouterr().err
    (tmp_path / "new" / "p.params.state").unlink()  # a --resume with no state: the trainer says so, nothing else
    driver.check_room_for(args, model, trainer, 2, 128)
    assert capsys.readouterr().err == ""
    driver.check_room_for(driver.parse_args(argv), model, trainer, 2, 128)  # a new run: no state to replace
    assert "but not for its training states as well" in capsys.readouterr().err


def test_under_run_sh_the_fix_for_an_output_path_is_out_dir(tmp_path, monkeypatch):
    """`OUT_DIR=/mnt/ro/sub ./run.sh vanilla_pretrain` said "pick another path", though run.sh's modes set the params'
    and predictions' paths (and a flag setting them otherwise is refused): under run.sh the fix is OUT_DIR, for the
    files beside the params too; a --log_path of the user's keeps "pick another path for the loss log"."""
    monkeypatch.setenv("RUN_SH_MODE", "vanilla_pretrain")
    (tmp_path / "ro").mkdir()
    blocked = tmp_path / "ro" / "file"
    blocked.write_text("x")  # a file where a folder should be: refused for root too
    params = str(blocked / "vanilla.pretrain.params")
    for what, named_by in (("params", None), ("predictions", None), ("training state", "--writing_params_path"),
                           ("loss log", "--writing_params_path")):
        with pytest.raises(DataError, match=r"is a file, not a folder; use another OUT_DIR \(run\.sh names the "
                                            r"file\)$"):
            check_output_path(params, what, named_by=named_by)
    with pytest.raises(DataError, match=r"is a file, not a folder; pick another path for the loss log$"):
        check_output_path(params, "loss log")

    def refused(f):
        raise OSError(errno.EACCES, "Permission denied")
    with pytest.raises(DataError, match=r"\(Permission denied\); the previous file, if any, is unchanged; use another "
                                        r"OUT_DIR$"):
        files_module.atomic_write(str(tmp_path / "p.params"), refused)
    monkeypatch.delenv("RUN_SH_MODE")
    with pytest.raises(DataError, match=r"is unchanged; pick another path$"):
        files_module.atomic_write(str(tmp_path / "p.params"), refused)


def test_params_whose_final_write_fails_are_kept_elsewhere(tmp_path, monkeypatch):
    """(permission audit) The params folder made read-only while a run trained (or its disk filled, its mount
    went): the final write failed in one line, "pick another path", and the trained model was lost with it. Now
    the params go to the temporary folder, and the line names that file and the `mv` that puts it in place."""
    from submission.files import NoRoom
    monkeypatch.setenv("GPT_NUM_THREADS", "1")
    keep = tmp_path / "tmp"
    keep.mkdir()
    monkeypatch.setattr(files_module.tempfile, "tempdir", str(keep))
    (tmp_path / "wiki.txt").write_text("Ada Quill was born in Lisbon.\nBo Li was born in Oslo.\n" * 8, encoding="utf-8")
    out = tmp_path / "p.params"
    argv = ["--function=pretrain", "--variant=vanilla", f"--pretrain_corpus_path={tmp_path / 'wiki.txt'}",
            f"--writing_params_path={out}", "--max_epochs", "1", "--n_layer", "1", "--n_head", "2", "--n_embd", "16",
            "--block_size", "32", "--batch_size", "4"]
    real = files_module.atomic_torch_save
    trained = {}

    def folder_now_read_only(obj, path):
        if path == str(out):
            trained.update(obj)
            raise error(f"{path}: could not write it (Permission denied); the previous file, if any, is unchanged; "
                        f"pick another path")
        return real(obj, path)
    monkeypatch.setattr(files_module, "atomic_torch_save", folder_now_read_only)
    for error in (DataError, NoRoom):
        with pytest.raises(error) as caught:
            driver.main(argv)
        kept = keep / f"p.params.kept-{os.getpid()}"
        assert str(caught.value) == (f"{out}: could not write it (Permission denied); the previous file, if any, is "
                                     f"unchanged; pick another path (the trained params are kept in {kept}: mv "
                                     f"{shlex.quote(str(kept))} {shlex.quote(str(out))} once that path can take them)")
        saved = torch.load(kept, weights_only=True)
        assert list(saved) == list(trained) and all(torch.equal(saved[k], trained[k]) for k in saved)
        assert not out.exists()
        kept.unlink()
    monkeypatch.setattr(files_module.tempfile, "tempdir", str(tmp_path / "gone" / "too"))
    (tmp_path / "gone").write_text("")  # the temporary folder fails as well: the first error alone
    with pytest.raises(NoRoom, match=r"pick another path$"):
        driver.main(argv)
