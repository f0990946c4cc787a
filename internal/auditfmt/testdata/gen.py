#!/usr/bin/env python3
"""Writes the audit chain test vectors: chains/<case>/ and chains.json, lines.json.

Written from docs/audit.md ("The hash chain") alone, sharing nothing with the
Go code that writes and verifies the chain: the vectors are the independent
reading both sides are checked against. Run from this directory:
python3 gen.py. The output is deterministic.
"""
import hashlib
import json
import os
import shutil

ZERO = bytes(16)


def h(prev, hashed):
    return hashlib.sha256(prev + hashed).digest()[:16]


def seal(body, prev, n, with_prev, number=None, upper=False, prev_text=None):
    """The line for body (without its closing brace) as line n after prev."""
    line = body
    if with_prev:
        line += b',"chain_prev":"' + (prev_text if prev_text is not None else prev.hex().encode()) + b'"'
    line += b',"chain":"' + (number if number is not None else str(n).encode()) + b':'
    s = h(prev, line)
    text = s.hex().upper() if upper else s.hex()
    return line + text.encode() + b'"}', s


def body(i):
    # Non-ASCII and a JSON escape, so that bytes, not characters, are hashed.
    return ('{"timestamp":"2026-11-22T10:09:%02d.000Z","event":"received","id":"e%d",'
            '"payload":{"text":"caf\u00e9 \\u2028 %d"}' % (i % 60, i, i)).encode()


class Log:
    """Writes files of one log the way docs/audit.md says a gateway does."""

    def __init__(self, prev=ZERO):
        self.prev = prev
        self.i = 0
        self.files = []  # (name, [(body, with_prev, line)])

    def file(self, name, count, restart_at=()):
        lines = []
        for n in range(1, count + 1):
            self.i += 1
            b = body(self.i)
            wp = n == 1 or n in restart_at
            line, self.prev = seal(b, self.prev, n, wp)
            lines.append([b, wp, line])
        self.files.append((name, lines))
        return lines


ROT = ['envelope-history.20261122T100950.999Z.jsonl',
       'envelope-history.20261122T101000.000Z.jsonl']
CUR = 'envelope-history.jsonl'


def write_case(root, case, files):
    d = os.path.join(root, case)
    os.makedirs(d)
    for name, lines in files:
        with open(os.path.join(d, name), 'wb') as f:
            for l in lines:
                f.write(l + b'\n')


def main():
    root = 'chains'
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    cases = []

    def good(case, log, starts_after=''):
        write_case(root, case, [(n, [l[2] for l in ls]) for n, ls in log.files])
        cases.append({
            'case': case, 'intact': True, 'head': log.prev.hex(), 'starts_after': starts_after,
            'files': [{'name': n, 'lines': [{'body': l[0].decode(), 'with_prev': l[1]} for l in ls]}
                      for n, ls in log.files],
        })

    def broken(case, files, at_file, at_line):
        write_case(root, case, files)
        cases.append({'case': case, 'intact': False, 'file': at_file, 'line': at_line})

    # Good: one file across the line numbers 9 to 10 (one more digit), with a
    # gateway that started again on it at line 5.
    log = Log()
    log.file(CUR, 12, restart_at=(5,))
    good('one-file', log)

    # Good: two rotated files and the current one, one chain.
    log = Log()
    log.file(ROT[0], 3)
    log.file(ROT[1], 2)
    log.file(CUR, 2)
    good('rotated', log)

    # Good: the oldest file continues from a file retention deleted.
    earlier = h(ZERO, b'a line of a file no longer here')
    log = Log(earlier)
    log.file(ROT[1], 2)
    log.file(CUR, 1)
    good('starts-after', log, earlier.hex())

    # Broken: each a chain whose line 2 is wrong in one way; the hash of
    # every line covers its bytes as written, so only the form is wrong.
    def with_line2(case, **kw):
        l1, s1 = seal(body(1), ZERO, 1, True)
        l2, s2 = seal(body(2), s1, 2, False, **kw)
        l3, _ = seal(body(3), s2, 3, False)
        broken(case, [(CUR, [l1, l2, l3])], CUR, 2)

    with_line2('leading-zero', number=b'02')
    with_line2('zero-number', number=b'0')
    with_line2('plus-sign', number=b'+2')
    with_line2('upper-case-hash', upper=True)
    with_line2('wrong-number', number=b'3')

    # Broken: chain_prev in upper case on the first line.
    up = h(ZERO, b'x')
    l1u, _ = seal(body(1), up, 1, True, prev_text=up.hex().upper().encode())
    broken('upper-case-prev', [(CUR, [l1u])], CUR, 1)

    # Broken: a byte of line 2 altered.
    log = Log()
    lines = [l[2] for l in log.file(CUR, 3)]
    lines[1] = lines[1].replace(b'e2', b'e9', 1)
    broken('altered', [(CUR, lines)], CUR, 2)

    # Broken: the middle of three files removed.
    log = Log()
    a = [l[2] for l in log.file(ROT[0], 2)]
    log.file(ROT[1], 2)
    c = [l[2] for l in log.file(CUR, 2)]
    broken('missing-file', [(ROT[0], a), (CUR, c)], CUR, 1)

    with open('chains.json', 'w') as f:
        json.dump(cases, f, indent=1, ensure_ascii=False)
        f.write('\n')

    # Lines by form alone: ok says whether their chain members are well
    # formed; n and has_prev what they say when they are.
    hx = '0123456789abcdef' * 2
    pre = '{"event":"received"'
    lines = []

    def line(text, ok, n=0, has_prev=False):
        lines.append({'line': text, 'ok': ok, 'n': n, 'has_prev': has_prev})

    line(pre + ',"chain":"1:' + hx + '"}', True, 1)
    line(pre + ',"chain_prev":"' + '0' * 32 + '","chain":"1:' + hx + '"}', True, 1, True)
    line(pre + ',"chain":"10:' + hx + '"}', True, 10)
    # The largest number a writer can still continue from (to 2^64-1).
    line(pre + ',"chain":"18446744073709551614:' + hx + '"}', True, 18446744073709551614)
    line(pre + ',"chain":"18446744073709551616:' + hx + '"}', False)
    line(pre + ',"chain":"01:' + hx + '"}', False)
    line(pre + ',"chain":"00:' + hx + '"}', False)
    line(pre + ',"chain":"0:' + hx + '"}', False)
    line(pre + ',"chain":"+1:' + hx + '"}', False)
    line(pre + ',"chain":"-1:' + hx + '"}', False)
    line(pre + ',"chain":"1_0:' + hx + '"}', False)
    line(pre + ',"chain":" 1:' + hx + '"}', False)
    line(pre + ',"chain":":' + hx + '"}', False)
    line(pre + ',"chain":"1:' + hx.upper() + '"}', False)
    line(pre + ',"chain":"1:' + hx[:31] + '"}', False)
    line(pre + ',"chain":"1:' + hx + 'a"}', False)
    line(pre + ',"chain":"1:' + hx + '"', False)
    line(pre + ',"chain_prev":"' + 'A' * 32 + '","chain":"1:' + hx + '"}', False)
    line(pre + ',"chain_prev":"' + 'g' * 32 + '","chain":"1:' + hx + '"}', False)
    # A chain_prev not directly before chain is an ordinary member.
    line(pre + ',"chain_prev":"' + '0' * 32 + '","x":1,"chain":"1:' + hx + '"}', True, 1)
    line(',"chain":"1:' + hx + '"}', True, 1)
    line('"chain":"1:' + hx + '"}', False)
    line('', False)
    with open('lines.json', 'w') as f:
        json.dump(lines, f, indent=1)
        f.write('\n')


if __name__ == '__main__':
    main()
