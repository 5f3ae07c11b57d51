"""Key material of authenticated packets (``--secure``): the domain key, the run's session
(a fresh salt and a persisted, monotonic epoch), the keys derived from them, replay windows.

UET's transport security sublayer derives each packet's key from a *secure domain key*
(SDK) and a context -- the epoch, the high bits of the packet counter and the source
(SSI) -- and carries epoch and counter in the packet (TSC: epoch 16 bits, counter 48
bits).  Its epochs and keys are handed out by a management entity (SDME).  This project
has no SDME: whoever writes the node configurations plays its part for one run
(``new_session``), and every process of the run reads the same session from its
configuration, so no two processes need a shared clock to agree.

* **Session.**  A run's configurations carry ``salt`` (16 bytes from ``os.urandom``) and
  ``epoch``, the next value of a counter kept next to the key file
  (``KEYFILE.epochs``, under an exclusive ``flock``).  Every key of the run is
  ``HKDF-SHA256(domain key, salt, "gse-tss/2 LABEL EPOCH SRC>DST INDEX")``: 16 bytes of
  AES-128-GCM key and 12 bytes of nonce mask (TLS 1.3's per-record nonce, UET's IV mask).
  A fresh salt alone already makes every run's keys new; the epoch makes the state a node
  keeps of it bounded and puts the run on the wire (a datagram of another epoch is
  refused before any cryptography).
* **Claims.**  A configuration is used once: a node that starts records the epoch it
  seals under (``EpochStore.claim``), and a second start of the same node under the same
  (or a much older) epoch is refused -- otherwise running one set of configurations
  twice would reuse its salt, epoch and so every (key, nonce) pair.  The claims of a node
  are a window of ``CLAIM_WINDOW`` epochs, so runs with one key file may overlap.
* **Counters.**  A sender counts per destination from 1; the 48-bit counter and the
  epoch form the TSC, which with an operation code is the nonce.  ``REKEY_SHIFT``: a new
  key every 2**32 packets (the key's INDEX in its derivation); a sender whose counter
  would pass 2**48 - 1 stops sealing (counted ``exhausted``) instead of wrapping.

``ReplayWindow`` is the receiver's memory of counters (and a node's of epochs claimed).
"""

import fcntl
import hashlib
import json
import os
import struct

from gse.config import ConfigError

LABEL = b"gse-tss/2"
EPOCH_BITS = 16                     # the epoch on the wire (UET's TSC: epoch || counter)
COUNTER_BITS = 48
MAX_COUNTER = (1 << COUNTER_BITS) - 1
EPOCH_MASK = (1 << EPOCH_BITS) - 1
REKEY_SHIFT = 32                    # a new key every 2**32 packets of one sender
SALT_BYTES = 16
REPLAY_WINDOW = 4096                # counters a receiver remembers behind the newest
CLAIM_WINDOW = 64                   # epochs a node remembers having started under
STATE_FORMAT = "gse-tss-epochs/1"
_TSC = struct.Struct("!Q")


def aead():
    """The ``cryptography`` primitives, or a ``ConfigError`` saying how to get them."""
    try:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF
    except ImportError:
        raise ConfigError("authenticated packets need the cryptography package "
                          "(pip install cryptography, or '.[secure]')") from None
    return hashes, AESGCM, HKDF, InvalidTag


def load_domain_key(path):
    """The domain key in ``path``: 64 hexadecimal digits, or at least 16 raw bytes."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise ConfigError("%s: cannot read the domain key: %s" % (path, exc.strerror or exc)) \
            from None
    text = raw.strip()
    try:
        if len(text) == 64:
            return bytes.fromhex(text.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        pass
    if len(raw) < 16:
        raise ConfigError("%s: a domain key is 64 hex digits or at least 16 bytes, got %d "
                          "bytes" % (path, len(raw)))
    return raw


def domain_id(domain_key):
    """The domain's 24-bit identifier (UET's SDI): a digest of the key, which it does not
    reveal; hosts with different key files see each other's packets as another domain."""
    return int.from_bytes(hashlib.sha256(LABEL + b" sdi" + domain_key).digest()[:3], "big")


class ReplayWindow:
    """The newest number accepted and which of the ``size`` below it were (bit i: newest
    - i).  ``fresh(n)``: not seen and not too old; ``accept(n)`` records it."""

    __slots__ = ("newest", "bits", "size")

    def __init__(self, size=REPLAY_WINDOW, newest=0, bits=0):
        self.size = size
        self.newest = newest
        self.bits = bits

    def fresh(self, n):
        newest = self.newest
        return n > newest or (n > newest - self.size and not self.bits >> (newest - n) & 1)

    def accept(self, n):
        newest = self.newest
        if n > newest:
            self.bits = ((self.bits << (n - newest)) | 1) & ((1 << self.size) - 1)
            self.newest = n
        else:
            self.bits |= 1 << (newest - n)


class KeySchedule:
    """Every key of one run: ``derive(label, src, dst, index) -> (AESGCM, nonce mask)``.

    ``label`` separates uses (``b"e2e"``: host to host, ``b"link"``: a link's PFC frames);
    ``src``/``dst`` are node ids; ``index`` is the counter's high bits (``REKEY_SHIFT``).
    """

    __slots__ = ("domain_key", "salt", "epoch", "wire_epoch", "sdi", "_hashes", "_aesgcm",
                 "_hkdf", "invalid_tag", "derived")

    def __init__(self, domain_key, salt, epoch):
        hashes, aesgcm, hkdf, invalid = aead()
        if len(salt) != SALT_BYTES:
            raise ConfigError("a session salt is %d bytes, got %d" % (SALT_BYTES, len(salt)))
        if not isinstance(epoch, int) or epoch < 1:
            raise ConfigError("a session epoch is an integer >= 1, got %r" % (epoch,))
        self.domain_key = domain_key
        self.salt = salt
        self.epoch = epoch
        self.wire_epoch = epoch & EPOCH_MASK
        self.sdi = domain_id(domain_key)
        self._hashes = hashes
        self._aesgcm = aesgcm
        self._hkdf = hkdf
        self.invalid_tag = invalid
        self.derived = 0                # keys derived (each a few microseconds)

    def derive(self, label, src, dst, index):
        info = b"%s %s %d %d>%d %d" % (LABEL, label, self.epoch, src, dst, index)
        okm = self._hkdf(algorithm=self._hashes.SHA256(), length=28, salt=self.salt,
                         info=info).derive(self.domain_key)
        self.derived += 1
        return self._aesgcm(okm[:16]), int.from_bytes(okm[16:], "big")

    def tsc(self, counter):
        """The 64-bit TSC of ``counter``: this epoch (16 bits) and the counter (48)."""
        return self.wire_epoch << COUNTER_BITS | counter


def schedule_from_config(secure, key=None):
    """The ``KeySchedule`` of a node configuration's ``secure`` section."""
    domain_key = key if key is not None else load_domain_key(secure["key_file"])
    try:
        salt = bytes.fromhex(secure["salt"])
    except (KeyError, TypeError, ValueError):
        raise ConfigError("field 'secure' has no session salt (32 hex digits): configurations "
                          "written before issue 25; write them again") from None
    return KeySchedule(domain_key, salt, secure.get("epoch"))


class EpochStore:
    """The epochs of one domain key, in ``KEYFILE.epochs`` next to it (JSON, replaced
    atomically under an exclusive ``flock`` of ``KEYFILE.epochs.lock``): the last epoch
    handed out and, per node, the window of epochs it started under."""

    def __init__(self, key_file):
        self.key_file = key_file
        self.path = os.path.abspath(key_file) + ".epochs"
        self.lock_path = self.path + ".lock"

    def _locked(self, update):
        try:
            with open(self.lock_path, "a") as lock:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
                try:
                    state = self._read()
                    result = update(state)
                    self._write(state)
                    return result
                finally:
                    fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
        except OSError as exc:
            raise ConfigError("%s: cannot keep the epochs of the domain key %s: %s (the key "
                              "file's folder must be writable)"
                              % (self.path, self.key_file, exc.strerror or exc)) from None

    def _read(self):
        try:
            with open(self.path) as f:
                state = json.load(f)
        except FileNotFoundError:
            return {"format": STATE_FORMAT, "epoch": 0, "claims": {}}
        except ValueError as exc:
            raise ConfigError("%s: not the epochs of a domain key (%s): remove it only "
                              "together with the key file" % (self.path, exc)) from None
        if (not isinstance(state, dict) or state.get("format") != STATE_FORMAT
                or not isinstance(state.get("epoch"), int)
                or not isinstance(state.get("claims"), dict)):
            raise ConfigError("%s: not the epochs of a domain key (format %r)"
                              % (self.path, state.get("format") if isinstance(state, dict)
                                 else None))
        return state

    def _write(self, state):
        tmp = "%s.tmp.%d" % (self.path, os.getpid())
        with open(tmp, "w") as f:
            json.dump(state, f, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def allocate(self):
        """The next epoch (>= 1), never handed out before for this key file."""
        def bump(state):
            state["epoch"] += 1
            return state["epoch"]
        return self._locked(bump)

    def claim(self, node, name, epoch):
        """Record that ``node`` starts sealing under ``epoch``; ``ConfigError`` if it did
        before (the same configuration run twice) or the epoch is too old to tell."""
        def take(state):
            if epoch > state["epoch"]:
                raise ConfigError("node %s: epoch %d of %s was never handed out (the last "
                                  "is %d): the configuration belongs to another key file's "
                                  "epochs" % (name, epoch, self.key_file, state["epoch"]))
            newest, bits = state["claims"].get(str(node), (0, 0))
            w = ReplayWindow(CLAIM_WINDOW, newest, bits)
            if not w.fresh(epoch):
                raise ConfigError(
                    "node %s: epoch %d of %s was already used by a run of this node (or is "
                    "%d or more epochs old): under --secure a configuration runs once, "
                    "write the configurations again (gse agent-configs)"
                    % (name, epoch, self.key_file, CLAIM_WINDOW))
            w.accept(epoch)
            state["claims"][str(node)] = [w.newest, w.bits]
        self._locked(take)


def new_session(key_file):
    """The ``secure`` section of a run's configurations: key file, fresh salt, new epoch."""
    load_domain_key(key_file)           # the key is readable before anything is handed out
    return {"key_file": os.path.abspath(key_file),
            "salt": os.urandom(SALT_BYTES).hex(),
            "epoch": EpochStore(key_file).allocate()}


def tsc_bytes(tsc):
    return _TSC.pack(tsc)
