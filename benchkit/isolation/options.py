"""The one option scanner: how a program's getopt(3) reads its command line.

GNU getopt_long: clustered short options (`-sSo FILE`), a short option's value attached
(`-oFILE`) or the next word, long options with `=value` or the next word, any unique
prefix of a long name (`env --uns` is `--unset`), `--` ending the options, and (unless
the option string starts with `+`, as every wrapper's does) options anywhere among the
operands. Every program the guard reads options of is described here once, from its
own `--help`.

A word whose value is only known at run time is an operand, unless its literal text
already starts an option (`-o"$F"`): then the option is read from that text and its
value is the dynamic rest, or, when even the option's name is dynamic (`-"$X"`), the
flag is `?` (the caller denies what it cannot read).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .words import Word, literal_word

NONE, REQUIRED, OPTIONAL = 0, 1, 2
UNREADABLE = "?"


@dataclass(frozen=True)
class Options:
    """A program's options: `short` in getopt's syntax (`n:` takes a value, `d::` an
    optional attached one, a leading `+` stops at the first operand), `long` its long
    names, each NONE, REQUIRED or OPTIONAL."""

    short: str = ""
    long: dict[str, int] = field(default_factory=dict)

    @property
    def permute(self) -> bool:
        return not self.short.startswith("+")

    def letter(self, c: str) -> int | None:
        """Whether a short letter takes a value (REQUIRED, OPTIONAL), NONE, or None
        when unknown."""
        short = self.short.lstrip("+")
        at = short.find(c)
        if at < 0 or c == ":":
            return None
        if short[at + 1:at + 3] == "::":
            return OPTIONAL
        return REQUIRED if short[at + 1:at + 2] == ":" else NONE

    def resolve(self, name: str) -> str | None:
        """The long option `name` abbreviates (exact, else a unique prefix), or None."""
        if name in self.long:
            return name
        matches = [full for full in self.long if name and full.startswith(name)]
        return matches[0] if len(matches) == 1 else None


def spec(short: str, required: str = "", optional: str = "", flags: str = "") -> Options:
    """Options from space-separated long names by kind."""
    long = {name: NONE for name in flags.split()}
    long.update({name: REQUIRED for name in required.split()})
    long.update({name: OPTIONAL for name in optional.split()})
    return Options(short, long)


@dataclass
class Parsed:
    options: list[tuple[str, Word | None]] = field(default_factory=list)  # `-o`, `--output`
    operands: list[Word] = field(default_factory=list)
    end: int = 0        # the index of the first operand (without permutation: all after it)

    def values(self, *flags: str) -> list[Word | None]:
        return [value for flag, value in self.options if flag in flags]

    def has(self, *flags: str) -> bool:
        return any(flag in flags for flag, _ in self.options)


def getopt(words: Sequence[Word], options: Options, start: int = 1) -> Parsed:
    """Scan `words[start:]` as the program's getopt would."""
    parsed, i = Parsed(end=len(words)), start
    while i < len(words):
        word = words[i]
        text = word.value if word.value is not None else word.prefix
        if text == "--" and word.value is not None:
            parsed.end = min(parsed.end, i + 1)
            parsed.operands += words[i + 1:]
            break
        if not text.startswith("-") or text == "-" or (word.value is None and text in ("", "-")):
            if word.value is None and text == "-":  # -"$X": an option only known at run time
                parsed.options.append((UNREADABLE, word))
                i += 1
                continue
            if not options.permute:
                parsed.end = i
                parsed.operands += words[i:]
                break
            parsed.end = min(parsed.end, i)
            parsed.operands.append(word)
            i += 1
            continue
        i = (_long if text.startswith("--") else _short)(words, i, text, options, parsed)
    return parsed


def _long(words: Sequence[Word], i: int, text: str, options: Options, parsed: Parsed) -> int:
    word, (name, eq, attached) = words[i], text[2:].partition("=")
    dynamic = words[i].value is None
    if dynamic and not eq:  # --out"$X": the name itself is not known
        parsed.options.append((UNREADABLE, word))
        return i + 1
    full = options.resolve(name)
    kind = options.long.get(full or "", NONE)
    value = None
    if eq:
        value = _rest(word, len(text) - len(attached)) if dynamic else literal_word(attached)
    elif kind == REQUIRED and i + 1 < len(words):
        value, i = words[i + 1], i + 1
    parsed.options.append(("--" + (full or name), value))
    return i + 1


def _short(words: Sequence[Word], i: int, text: str, options: Options,
           parsed: Parsed) -> int:
    word, dynamic = words[i], words[i].value is None
    for k, letter in enumerate(text[1:], 1):
        kind = options.letter(letter)
        rest = text[k + 1:]
        if kind in (REQUIRED, OPTIONAL):
            if rest or dynamic:
                value = _rest(word, k + 1) if dynamic else literal_word(rest)
            elif kind == REQUIRED and i + 1 < len(words):
                value, i = words[i + 1], i + 1
            else:
                value = None
            parsed.options.append(("-" + letter, value))
            return i + 1
        parsed.options.append(("-" + letter, None))
    if dynamic:  # -s"$X": more letters only known at run time
        parsed.options.append((UNREADABLE, word))
    return i + 1


def _rest(word: Word, at: int) -> Word:
    """The part of a dynamic word after its first `at` literal characters."""
    return Word(word.text[at:], None, word.pattern, word.prefix[at:])


# --- the programs ---------------------------------------------------------------------

ENV = spec("+iu:0C:S:v", "unset chdir split-string", "block-signal default-signal ignore-signal",
           "ignore-environment null list-signal-handling debug help version")
NICE = spec("+n:", "adjustment", flags="help version")
NOHUP = spec("+", flags="help version")
TIMEOUT = spec("+k:s:v", "kill-after signal", flags="foreground preserve-status verbose help version")
TIME = spec("+af:o:pqvV", "format output", flags="append portability quiet verbose help version")
STDBUF = spec("+i:o:e:", "input output error", flags="help version")
SETSID = spec("+cfw", flags="ctty fork wait help version")
XARGS = spec("+0a:E:e::I:i::l::L:n:prP:ts:xd:",
             "arg-file delimiter max-args max-procs max-chars process-slot-var",
             "eof replace max-lines",
             "null open-tty interactive no-run-if-empty show-limits verbose exit help version")
SUDO = spec("+AbEeHiKklnPSsVvg:h::p:r:t:T:u:U:C:D:R:",
            "user group close-from chdir prompt chroot role type command-timeout other-user",
            "host", "askpass background preserve-env edit set-home login remove-timestamp "
            "reset-timestamp list non-interactive preserve-groups stdin shell validate "
            "version help")
DOAS = spec("+nsu:C:")
# Bash builtins read their options with internal_getopt: short ones only, no permutation.
BUILTIN = spec("+")
EXEC = spec("+cla:")
COMMAND = spec("+pVv")
DECLARE = spec("+aAfFgiIlnrtuxp")
EXPORT = spec("+fnp")
READ = spec("+ersa:d:i:n:N:p:t:u:")
MAPFILE = spec("+d:n:O:s:u:C:c:t")
PRINTF = spec("+v:")
CD = spec("+LPe@")
UNSET = spec("+fvn")
MKDIR = spec("m:pvZ", "mode", "context", "parents verbose help version")
TEE = spec("aip", optional="output-error", flags="append ignore-interrupts help version")
UNIQ = spec("cdDf:is:uw:z", "skip-fields skip-chars check-chars", "all-repeated group",
            "count repeated ignore-case unique zero-terminated help version")
SORT = spec("bcCdfghik:MmnRrsS:t:T:uVo:z",
            "key output buffer-size field-separator temporary-directory batch-size "
            "compress-program files0-from random-source parallel sort", "check",
            "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort "
            "ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort reverse "
            "version-sort merge stable unique zero-terminated debug help version")
MKTEMP = spec("dqp:tu", "suffix", "tmpdir", "directory quiet dry-run help version")
SED = spec("bsnrzuEe:f:l:i::", "expression file line-length", "in-place",
           "quiet silent debug posix sandbox follow-symlinks null-data zero-terminated "
           "separate unbuffered regexp-extended binary help version")
# gawk's (mawk reads a subset): -d, -o and -p take an optional attached file.
AWK = spec("+F:v:f:W:e:E:i:l:d::o::p::bcCghLMnNOPrsStVY",
           "field-separator assign file source exec include load",
           "dump-variables pretty-print profile lint",
           "characters-as-bytes traditional copyright gen-pot help lint-old bignum "
           "use-lc-numeric non-decimal-data optimize posix re-interval no-optimize sandbox "
           "version")
# curl 7.88's `curl --help all`, which accepts any unique prefix of a long name.
CURL = spec(
    "E:K:C:b:c:d:D:F:P:H:m:o:U:Q:r:e:X:Y:y:t:z:T:u:A:w:x:aqfGgI0ik46jlLMnNZ#pJORSs231BvVh",
    "abstract-unix-socket alt-svc aws-sigv4 cacert capath cert cert-type ciphers config "
    "connect-timeout connect-to continue-at cookie cookie-jar create-file-mode crlfile curves "
    "data data-ascii data-binary data-raw data-urlencode delegation dns-interface dns-ipv4-addr "
    "dns-ipv6-addr dns-servers doh-url dump-header egd-file engine etag-compare etag-save "
    "expect100-timeout form form-string ftp-account ftp-alternative-to-user ftp-method ftp-port "
    "ftp-ssl-ccc-mode happy-eyeballs-timeout-ms header hostpubmd5 hostpubsha256 hsts "
    "interface json keepalive-time key key-type krb libcurl limit-rate local-port login-options "
    "mail-auth mail-from mail-rcpt max-filesize max-redirs max-time netrc-file noproxy "
    "oauth2-bearer output output-dir parallel-max pass pinnedpubkey preproxy proto "
    "proto-default proto-redir proxy proxy-cacert proxy-capath proxy-cert proxy-cert-type "
    "proxy-ciphers proxy-crlfile proxy-header proxy-key proxy-key-type proxy-pass "
    "proxy-pinnedpubkey proxy-service-name proxy-tls13-ciphers proxy-tlsauthtype "
    "proxy-tlspassword proxy-tlsuser proxy-user proxy1.0 pubkey quote random-file range rate "
    "referer request request-target resolve retry retry-delay retry-max-time sasl-authzid "
    "service-name socks4 socks4a socks5 socks5-gssapi-service socks5-hostname speed-limit "
    "speed-time stderr telnet-option tftp-blksize time-cond tls-max tls13-ciphers tlsauthtype "
    "tlspassword tlsuser trace trace-ascii unix-socket upload-file url url-query user "
    "user-agent write-out variable",
    "help",
    "anyauth append basic cert-status compressed compressed-ssh create-dirs crlf digest disable "
    "disable-eprt disable-epsv fail fail-early fail-with-body get globoff head include insecure "
    "ipv4 ipv6 list-only location location-trusted manual negotiate netrc netrc-optional next "
    "no-buffer no-clobber no-keepalive no-progress-meter no-sessionid ntlm parallel "
    "parallel-immediate path-as-is post301 post302 post303 progress-bar proxy-anyauth "
    "proxy-basic proxy-digest proxy-insecure proxy-negotiate proxy-ntlm proxytunnel raw "
    "remote-header-name remote-name remote-name-all remote-time remove-on-error "
    "retry-all-errors retry-connrefused sasl-ir show-error silent ssl ssl-reqd styled-output "
    "tcp-fastopen tcp-nodelay tlsv1 tr-encoding trace-time use-ascii verbose version xattr")
