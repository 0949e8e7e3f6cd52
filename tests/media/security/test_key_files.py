"""Private keys others could read or replace are refused, as OpenSSH refuses them (issue 51,
item 3): a key file open to group or others, one that is not a regular file, one in a folder
group or others may write (not sticky); each message names the file, its mode and the chmod
that fixes it.  Key folders are made 0700 and keys written 0600 whatever the umask; through
the command line a refusal is one line and exit code 2."""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from cinegpu.media.errors import ExposedKey, MediaError
from cinegpu.media.security.certificates import make_chain, write_chain
from cinegpu.media.security.content_keys import new_track_key, read_key_file, write_key_file
from cinegpu.media.security.kdm import load_private_key
from cinegpu.media.security.key_files import check_private_file, make_private_folder
from cinegpu.media.security.package_signature import load_signer, signer_folder, user_signer
from conftest import DCP_SAMPLES
from helpers.cli import cinegpu
from helpers.kdm_build import private_copy

KDM = DCP_SAMPLES / "libdcp-kdm" / "target.pem.crt.de5d4eba-e683-41ca-bdda-aa4ad96af3f4.kdm.xml"


@pytest.fixture(scope="module")
def pem():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _key(folder, pem, mode=0o600, folder_mode=0o700):
    folder.mkdir(exist_ok=True)
    path = folder / "leaf.key"
    path.write_bytes(pem)
    path.chmod(mode)
    folder.chmod(folder_mode)
    return path


@contextmanager
def _umask(mask):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_a_private_key_of_600_in_a_folder_of_700_is_read(tmp_path, pem):
    key = load_private_key(_key(tmp_path / "mine", pem))
    assert isinstance(key, rsa.RSAPrivateKey)
    assert isinstance(load_private_key(_key(tmp_path / "shared", pem, 0o400, 0o755)), rsa.RSAPrivateKey)
    # a sticky folder (/tmp's 1777): others may not rename or remove one's file there
    assert isinstance(load_private_key(_key(tmp_path / "sticky", pem, folder_mode=0o1777)), rsa.RSAPrivateKey)


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o620, 0o602])
def test_a_private_key_open_to_others_is_refused_with_the_chmod(tmp_path, pem, mode):
    path = _key(tmp_path / "mine", pem, mode)
    with pytest.raises(ExposedKey) as e:
        load_private_key(path)
    message = str(e.value)
    assert str(path) in message and f"mode {mode:03o}" in message and f"chmod 600 {path}" in message
    assert pem.decode().splitlines()[1][:40] not in message


@pytest.mark.parametrize("folder_mode", [0o777, 0o775, 0o757, 0o722])
def test_a_private_key_in_a_folder_others_may_write_is_refused(tmp_path, pem, folder_mode):
    folder = tmp_path / "open"
    path = _key(folder, pem, folder_mode=folder_mode)
    with pytest.raises(ExposedKey) as e:
        load_private_key(path)
    message = str(e.value)
    assert str(path) in message and f"mode {folder_mode:03o}" in message and f"chmod 700 {folder}" in message


def test_a_link_to_a_key_in_an_open_folder_is_refused(tmp_path, pem):
    target = _key(tmp_path / "open", pem, folder_mode=0o777)
    (tmp_path / "mine").mkdir(mode=0o700)
    link = tmp_path / "mine" / "leaf.key"
    link.symlink_to(target)
    with pytest.raises(ExposedKey, match="chmod 700 .*open"):
        load_private_key(link)


def test_a_key_that_is_not_a_regular_file_is_refused(tmp_path):
    fifo = tmp_path / "key.pem"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(ExposedKey, match="not a regular file"):
        load_private_key(fifo)              # refused, never waited on
    with pytest.raises(ExposedKey, match="not a regular file"):
        check_private_file(tmp_path)
    with pytest.raises(MediaError, match="cannot read"):
        load_private_key(tmp_path / "missing.pem")


def test_a_content_key_file_in_an_open_folder_is_refused(tmp_path):
    folder = tmp_path / "open"
    folder.mkdir()
    path = write_key_file(folder / "keys.txt", [new_track_key("MDIK")])
    assert len(read_key_file(path).keys) == 1
    folder.chmod(0o777)
    with pytest.raises(ExposedKey, match=f"chmod 700 {folder}"):
        read_key_file(path)
    folder.chmod(0o700)
    path.chmod(0o640)
    with pytest.raises(ExposedKey, match=f"open to others \\(mode 640\\).*chmod 600 {path}"):
        read_key_file(path)


def test_a_signer_folder_others_may_write_is_refused(tmp_path):
    folder = tmp_path / "signer"
    write_chain(make_chain(), folder)
    assert load_signer(folder).subject
    folder.chmod(0o777)
    with pytest.raises(ExposedKey, match=f"chmod 700 {folder}"):
        load_signer(folder)
    folder.chmod(0o700)
    (folder / "leaf.key").chmod(0o644)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    signer_folder(env).parent.mkdir(parents=True)
    signer_folder(env).symlink_to(folder)
    with pytest.raises(ExposedKey, match="chmod 600 .*leaf.key"):     # the fix, not "move it away"
        user_signer(env)


def test_under_umask_000_key_folders_are_700_and_keys_600(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    with _umask(0):
        signer, made = user_signer(env)
        paths = write_chain(make_chain(), tmp_path / "out" / "chain")
        keys = write_key_file(tmp_path / "keys.txt", [new_track_key("MDIK")])
    assert made and signer.subject
    folder = signer_folder(env)
    for made_folder in (tmp_path / "config", tmp_path / "config" / "cinegpu", folder):
        assert _mode(made_folder) == 0o700, made_folder
    assert _mode(folder / "leaf.key") == 0o600
    assert _mode(tmp_path / "out") == 0o700 and _mode(tmp_path / "out" / "chain") == 0o700
    assert _mode(paths["key"]) == 0o600 and _mode(keys) == 0o600
    assert _mode(paths["chain"]) == 0o644          # certificates are public
    assert load_private_key(paths["key"]) is not None


def test_an_existing_folder_others_may_write_is_not_written_into(tmp_path):
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(0o777)
    with pytest.raises(ExposedKey, match=f"mode 777.*chmod 700 {folder}"):
        write_chain(make_chain(), folder)
    assert list(folder.iterdir()) == []
    folder.chmod(0o755)                 # readable by others is fine: the key itself is 600
    assert make_private_folder(folder) == folder and _mode(folder) == 0o755


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s): two child processes
def test_the_command_line_refuses_in_one_line_with_exit_2(tmp_path, pem):
    path = _key(tmp_path / "mine", pem, 0o644)
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    runs = [(cinegpu("kdm", "chain", "-o", str(open_folder)), f"chmod 700 {open_folder}")]
    if KDM.is_file():
        runs.append((cinegpu("kdm", "inspect", str(KDM), "--key", str(path)), f"chmod 600 {path}"))
    for r, words in runs:
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
        assert "Traceback" not in r.stderr and len(lines) == 1 and words in lines[0], r.stderr


def test_the_shared_sample_keys_are_copied_private(tmp_path):
    sample = DCP_SAMPLES / "libdcp-kdm" / "private.key"
    if not sample.is_file():
        pytest.skip(f"{sample} is absent")
    copy = private_copy(sample, tmp_path / "keys")
    assert _mode(copy) == 0o600 and _mode(copy.parent) == 0o700
    assert isinstance(load_private_key(copy), rsa.RSAPrivateKey)
    if _mode(sample) & 0o077:
        with pytest.raises(ExposedKey, match="open to others"):
            load_private_key(sample)
