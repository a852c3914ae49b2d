#!/usr/bin/env python3
"""Decode the frames written by the crosscheck dump with kafka-python and compare every field.

Usage: check_kafka_python.py DIR [--specs SPECS_DIR] [--verbose]

DIR holds `<Api>-v<version>-<req|resp>.bin` (a request or response frame: header and body, no
size prefix) and a `.json` beside each with the values our encoder was given (see
tests/crosscheck/dump.rs). SPECS_DIR holds Kafka's message schemas (the ones our code is
generated from); they say which fields a version carries and in what order, so the expected
values can be laid out the way each kafka-python decoder returns them.

kafka-python (3.x) has two independent decoders, and both are checked where they exist:

* "structs": the hand-written per-version `Struct` classes (`kafka.protocol.old` in 3.x, plain
  `kafka.protocol` in 2.x). Their layouts were written by hand, not generated from Kafka's
  schemas, so they are an independent reading of the protocol. Decoded values are nested
  tuples, compared by position.
* "schemas": the message classes built at run time from Kafka's JSON schemas bundled with
  kafka-python (Kafka 4.x schemas, 3.x only). Decoded values are objects, compared by name,
  tagged fields included.

Every case must decode without error, consume the whole frame, and give back every value.
Prints one line per failure, the skipped cases with their reasons, and a summary ending in
`N passed, M failed, K skipped`. Exits 1 on any failure, 2 on a usage or environment error.
"""

import argparse
import glob
import importlib
import io
import json
import os
import pkgutil
import re
import sys
import uuid

# Cases kafka-python cannot decode for reasons of its own, found by this check and explained
# in FINDINGS.md: (layer, message, version or None for all) -> reason.
KNOWN_PEER_LIMITS = {
    ('structs', 'DescribeAclsRequest', 2):
        'kafka-python reuses the v1 layout for flexible v2 (no compact encodings, no tagged '
        'fields)',
    ('structs', 'DescribeAclsResponse', 2):
        'kafka-python reuses the v1 layout for flexible v2 (no compact encodings, no tagged '
        'fields)',
    ('structs', 'DescribeLogDirsRequest', 0):
        'kafka-python declares Topics[].Partitions as one int32; the schema has []int32',
}

# Hand-written classes whose header class disagrees with Kafka's header-version rule (flexible
# versions use request header v2 / response header v1). The check reads the header by Kafka's
# rule and goes on with the body; a disagreement not listed here is a failure.
KNOWN_HEADER_QUIRKS = {
    ('OffsetForLeaderEpochRequest', 4): 'FLEXIBLE_VERSION not set: header v1 instead of v2',
    ('OffsetForLeaderEpochResponse', 4): 'FLEXIBLE_VERSION not set: header v0 instead of v1',
    ('DescribeAclsRequest', 2): 'FLEXIBLE_VERSION not set: header v1 instead of v2',
    ('DescribeAclsResponse', 2): 'FLEXIBLE_VERSION not set: header v0 instead of v1',
}

# Fields kafka-python's schema-driven classes name differently (by their json_patch hooks, or
# because their schemas predate a rename in Kafka 4.4's, which our code follows): ours -> theirs.
FIELD_ALIASES = {
    ('MetadataResponse', 'ClusterAuthorizedOperations'): 'authorized_operations',
    ('MetadataResponse', 'TopicAuthorizedOperations'): 'authorized_operations',
    ('DescribeClusterResponse', 'ClusterAuthorizedOperations'): 'authorized_operations',
    ('TxnOffsetCommitRequest', 'GenerationIdOrMemberEpoch'): 'GenerationId',
}


# --------------------------------------------------------------------------------------------
# Kafka's schemas

def parse_versions(s):
    """'3+' -> (3, 32767), '1-4' -> (1, 4), '2' -> (2, 2), 'none' or missing -> None."""
    if s is None:
        return None
    s = s.strip()
    if s in ('', 'none'):
        return None
    if s.endswith('+'):
        return (int(s[:-1]), 32767)
    if '-' in s:
        lo, hi = s.split('-')
        return (int(lo), int(hi))
    return (int(s), int(s))


def in_range(r, v):
    return r is not None and r[0] <= v <= r[1]


def load_spec(path):
    with open(path, encoding='utf-8') as f:
        text = '\n'.join(line for line in f.read().splitlines()
                         if not line.lstrip().startswith('//'))
    return json.loads(text)


def snake(name):
    """Our generator's field naming (xtask/src/codegen/emit.rs `snake`)."""
    out = []
    for i, c in enumerate(name):
        if 'A' <= c <= 'Z':
            prev_lower = i > 0 and (name[i - 1].islower() or name[i - 1].isdigit())
            next_lower = i + 1 < len(name) and name[i + 1].islower()
            prev_upper = i > 0 and 'A' <= name[i - 1] <= 'Z'
            if i > 0 and (prev_lower or (prev_upper and next_lower)):
                out.append('_')
            out.append(c.lower())
        else:
            out.append(c)
    return ''.join(out)


INT_TYPES = {'int8': 8, 'int16': 16, 'uint16': 16, 'int32': 32, 'uint32': 32, 'int64': 64}


class Field:
    """One schema field, with what a given version makes of it."""

    def __init__(self, js, common):
        self.name = js['name']
        self.key = snake(self.name)
        self.type = js['type']
        self.versions = parse_versions(js.get('versions'))
        self.nullable = parse_versions(js.get('nullableVersions'))
        self.tag = js.get('tag')
        self.tagged_versions = parse_versions(js.get('taggedVersions'))
        self.flexible_override = js.get('flexibleVersions')
        self.default = js.get('default')
        self.elem = self.type[2:] if self.type.startswith('[]') else None
        base = self.elem or self.type
        self.fields = None
        if 'fields' in js:
            self.fields = [Field(f, common) for f in js['fields']]
        elif base in common:
            self.fields = [Field(f, common) for f in common[base]]

    def present(self, v):
        return in_range(self.versions, v)

    def tagged(self, v):
        return self.tag is not None and in_range(self.tagged_versions, v)

    def is_nullable(self, v):
        return in_range(self.nullable, v)

    def is_struct(self):
        return self.fields is not None and self.elem is None

    def is_struct_array(self):
        return self.fields is not None and self.elem is not None

    def default_value(self):
        """The schema default, in the JSON shape the dump writes."""
        d = self.default
        if self.elem is not None:
            return None if d == 'null' else []
        if self.fields is not None:
            return None if d == 'null' else 'struct-default'
        if self.type in INT_TYPES:
            return int(d, 0) if isinstance(d, str) and d else (d or 0)
        if self.type == 'bool':
            return isinstance(d, str) and d.lower() == 'true' or d is True
        if self.type == 'float64':
            return float(d) if d else 0.0
        if self.type == 'uuid':
            return {'$uuid': '0' * 32}
        if d == 'null':
            return None
        if self.type in ('bytes', 'records'):
            return {'$bytes': ''}
        return d or ''


def is_default(field, value):
    d = field.default_value()
    if d == 'struct-default':
        return value is not None and all(
            is_default(f, value.get(f.key)) for f in field.fields
        ) and not value.get('unknown_tagged_fields')
    return value == d


def fmt_versions(r):
    if r is None:
        return 'none'
    return '%d+' % r[0] if r[1] == 32767 else '%d-%d' % r


def cut(r, lo, hi):
    if r is None or max(r[0], lo) > min(r[1], hi):
        return None
    return (max(r[0], lo), min(r[1], hi))


def join(a, b):
    """The union of two adjacent ranges (the generator refuses gaps)."""
    if a is None or b is None:
        return a or b
    return (min(a[0], b[0]), max(a[1], b[1]))


def merge_fields(old, new, m):
    """xtask/src/codegen/merge.rs's rule, on JSON fields: versions below m from the older
    schema, from m from the newer; older-only fields after their older predecessor."""
    keys = ('versions', 'nullableVersions', 'taggedVersions', 'flexibleVersions')
    old_by = {f['name']: f for f in old}
    out = []
    for f in new:
        f = dict(f)
        o = old_by.get(f['name'])
        if f.get('versions') is None and f.get('taggedVersions') is not None:
            f['versions'] = f['taggedVersions']
        for k in keys:
            below = cut(parse_versions(o.get(k) if k != 'versions' or o.get(k) else
                                       o.get('taggedVersions')), 0, m - 1) if o else None
            mine = cut(parse_versions(f.get(k)), m, 32767)
            if f.get(k) is not None or below is not None:
                f[k] = fmt_versions(join(below, mine))
        if o is not None and 'fields' in o and 'fields' in f:
            f['fields'] = merge_fields(o['fields'], f['fields'], m)
        out.append(f)
    after = -1
    for o in old:
        names = [f['name'] for f in out]
        if o['name'] in names:
            after = names.index(o['name'])
        elif cut(parse_versions(o.get('versions') or o.get('taggedVersions')), 0, m - 1):
            f = dict(o)
            for k in keys:
                if f.get(k) is not None:
                    f[k] = fmt_versions(cut(parse_versions(f[k]), 0, m - 1))
            after += 1
            out.insert(after, f)
    return out


def merge_spec(old, new):
    valid = parse_versions(new.get('validVersions'))
    if valid is None:
        return old
    if old.get('latestVersionUnstable'):
        return new
    m = valid[0]
    spec = dict(new)
    spec['fields'] = merge_fields(old.get('fields', []), new.get('fields', []), m)
    commons = {c['name']: c for c in old.get('commonStructs', [])}
    spec['commonStructs'] = [
        dict(c, fields=merge_fields(commons[c['name']]['fields'], c['fields'], m))
        if c['name'] in commons else c for c in new.get('commonStructs', [])]
    spec['flexibleVersions'] = fmt_versions(join(
        cut(parse_versions(old.get('flexibleVersions')), 0, m - 1),
        cut(parse_versions(new.get('flexibleVersions')), m, 32767)))
    return spec


class Specs:
    """Kafka's schemas as our codec has them: 3.9's merged with 4.4's (when given) by the
    generator's rule (xtask/src/codegen/merge.rs)."""

    def __init__(self, directory, newer=None):
        self.by_name = {}
        for path in glob.glob(os.path.join(directory, '*.json')):
            spec = load_spec(path)
            self.by_name[spec['name']] = spec
        if newer is None:
            return
        by_key = {(s.get('apiKey'), s['type']): n for n, s in self.by_name.items()
                  if s.get('apiKey') is not None}
        for path in glob.glob(os.path.join(newer, '*.json')):
            spec = load_spec(path)
            name = by_key.get((spec.get('apiKey'), spec['type']), spec['name'])
            old = self.by_name.pop(name, None)
            self.by_name[spec['name']] = merge_spec(old, spec) if old else spec

    def message(self, name):
        """(fields, flexible versions) of a message schema."""
        spec = self.by_name[name]
        common = {c['name']: c['fields'] for c in spec.get('commonStructs', [])}
        fields = [Field(f, common) for f in spec['fields']]
        return fields, parse_versions(spec.get('flexibleVersions'))


# --------------------------------------------------------------------------------------------
# Comparison

class Mismatch(Exception):
    pass


def ours_bytes(v):
    if v is None:
        return None
    return bytes.fromhex(v['$bytes'])


def as_bytes(v):
    if isinstance(v, memoryview):
        return v.tobytes()
    if isinstance(v, bytearray):
        return bytes(v)
    return v


def bits_to_int32(v):
    """kafka-python decodes authorized-operations bit fields to a set of bit numbers."""
    if v is None:
        return -2147483648
    n = 0
    for b in v:
        n |= 1 << b
    return n - (1 << 32) if n & 0x80000000 else n


def compare_simple(field, ours, theirs, path):
    t = field.type
    if t in INT_TYPES:
        if isinstance(theirs, (set, frozenset)) or (theirs is None and t == 'int32'):
            theirs = bits_to_int32(theirs)
        ok = isinstance(theirs, int) and not isinstance(theirs, bool) and theirs == ours
    elif t == 'bool':
        ok = isinstance(theirs, bool) and theirs == ours
    elif t == 'float64':
        ok = isinstance(theirs, float) and theirs == float(ours)
    elif t == 'string':
        ok = theirs == ours and (theirs is None or isinstance(theirs, str))
    elif t in ('bytes', 'records'):
        ok = as_bytes(theirs) == ours_bytes(ours)
    elif t == 'uuid':
        want = bytes.fromhex(ours['$uuid'])
        if theirs is None:
            got = bytes(16)
        elif isinstance(theirs, uuid.UUID):
            got = theirs.bytes
        elif isinstance(theirs, str):
            got = uuid.UUID(theirs).bytes
        else:
            got = as_bytes(theirs)
        ok = got == want
    else:
        raise Mismatch('%s: unknown schema type %s' % (path, t))
    if not ok:
        raise Mismatch('%s: ours %r, kafka-python %r' % (path, ours, theirs))


def check_field_order(obj, fields, path):
    """Our struct's fields are the schema's fields, in order (plus unknown tagged fields)."""
    keys = [k for k in obj if k != 'unknown_tagged_fields']
    want = [f.key for f in fields]
    if keys != want:
        raise Mismatch('%s: dump has fields %s, schema has %s' % (path, keys, want))


def primitive_tag_bytes(field, value):
    """Encodes a primitive tagged-field value the way Kafka does (compact encodings)."""
    t = field.type
    if t in INT_TYPES:
        return int(value).to_bytes(INT_TYPES[t] // 8, 'big', signed=not t.startswith('u'))
    if t == 'bool':
        return b'\x01' if value else b'\x00'
    if t == 'float64':
        import struct
        return struct.pack('>d', float(value))
    if t == 'uuid':
        return bytes.fromhex(value['$uuid'])
    if t in ('string', 'bytes'):
        raw = None if value is None else (
            value.encode('utf-8') if t == 'string' else ours_bytes(value))
        if raw is None:
            return b'\x00'
        return uvarint(len(raw) + 1) + raw
    return None


def uvarint(n):
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


# ---- the hand-written Struct decoders: positional tuples

def compare_positional(obj, fields, theirs, v, flexible, path):
    check_field_order(obj, fields, path)
    plain = [f for f in fields if f.present(v) and not f.tagged(v)]
    tagged = [f for f in fields if f.present(v) and f.tagged(v)]
    if not flexible and len(plain) == 1 and not isinstance(theirs, tuple):
        # A one-field struct written by hand as its field (e.g. Metadata v0-8 topics as
        # strings): the same bytes.
        theirs = (theirs,)
    if not isinstance(theirs, (tuple, list)):
        raise Mismatch('%s: kafka-python gave %r, expected a struct' % (path, theirs))
    if not flexible and len(theirs) != len(plain):
        # Fields grouped in a nested struct by hand (e.g. CreatePartitions v0-1
        # new_partitions = (count, assignment)): the same bytes as the flat schema.
        theirs = flatten(theirs)
    their_tags = {}
    if flexible and len(theirs) == len(plain) + 1 and isinstance(theirs[-1], dict):
        their_tags = theirs[-1]
        theirs = theirs[:-1]
    if len(theirs) != len(plain):
        raise Mismatch('%s: kafka-python decoded %d fields, version %d has %d (%s)' % (
            path, len(theirs), v, len(plain), ', '.join(f.name for f in plain)))
    for f, t in zip(plain, theirs):
        compare_field_positional(f, obj[f.key], t, v, flexible, path + '.' + f.name)
    if not flexible:
        return
    want = {}
    for f in tagged:
        if not is_default(f, obj[f.key]):
            want[f.tag] = f
    for u in obj.get('unknown_tagged_fields', []):
        want[u['tag']] = u
    if sorted(their_tags) != sorted(want):
        raise Mismatch('%s: tagged fields: ours %s, kafka-python %s' % (
            path, sorted(want), sorted(their_tags)))
    for tag, what in want.items():
        got = as_bytes(their_tags[tag])
        if isinstance(what, Field):
            enc = primitive_tag_bytes(what, obj[what.key])
            if enc is not None and enc != got:
                raise Mismatch('%s.%s (tag %d): ours %r, kafka-python %r' % (
                    path, what.name, tag, enc, got))
        elif got != ours_bytes(what['data']):
            raise Mismatch('%s: unknown tag %d: ours %s, kafka-python %s' % (
                path, tag, what['data']['$bytes'], got.hex()))


def flatten(t):
    out = []
    for x in t:
        if isinstance(x, tuple):
            out.extend(flatten(x))
        else:
            out.append(x)
    return tuple(out)


def compare_field_positional(f, ours, theirs, v, flexible, path):
    if f.elem is not None:
        if ours is None or theirs is None:
            if ours is not theirs:
                raise Mismatch('%s: ours %r, kafka-python %r' % (path, ours, theirs))
            return
        if not isinstance(theirs, list) or len(theirs) != len(ours):
            raise Mismatch('%s: ours %d elements, kafka-python %r' % (path, len(ours), theirs))
        for i, (o, t) in enumerate(zip(ours, theirs)):
            p = '%s[%d]' % (path, i)
            if f.fields is not None:
                compare_positional(o, f.fields, t, v, flexible, p)
            else:
                compare_simple(Field({'name': f.name, 'type': f.elem, 'versions': '0+'}, {}),
                               o, t, p)
    elif f.fields is not None:
        if ours is None or theirs is None:
            if ours is not theirs:
                raise Mismatch('%s: ours %r, kafka-python %r' % (path, ours, theirs))
            return
        compare_positional(ours, f.fields, theirs, v, flexible, path)
    else:
        compare_simple(f, ours, theirs, path)


# ---- the schema-driven decoders: objects, by name

def their_fields(container_struct):
    return {f._name: f for f in container_struct._fields}


def compare_named(obj, fields, theirs, their_struct, v, path, message):
    check_field_order(obj, fields, path)
    if theirs is None:
        raise Mismatch('%s: kafka-python gave null' % path)
    by_name = their_fields(their_struct)
    for f in fields:
        if not f.present(v):
            continue
        p = path + '.' + f.name
        tf = by_name.get(f.name) or by_name.get(FIELD_ALIASES.get((message, f.name)))
        if tf is None:
            raise Mismatch('%s: kafka-python\'s schema has no such field' % p)
        if not tf.for_version_q(v):
            raise Mismatch('%s: kafka-python\'s schema lacks it in v%d' % (p, v))
        got = getattr(theirs, tf.name)
        compare_field_named(f, obj[f.key], got, tf, v, p, message)
    want = {'_%d' % u['tag']: ours_bytes(u['data'])
            for u in obj.get('unknown_tagged_fields', [])}
    got = {k: as_bytes(b) for k, b in (getattr(theirs, 'unknown_tags', None) or {}).items()}
    if want != got:
        raise Mismatch('%s: unknown tagged fields: ours %r, kafka-python %r' % (path, want, got))


def compare_field_named(f, ours, theirs, tf, v, path, message):
    if f.elem is not None:
        if ours is None or theirs is None:
            if ours is not theirs:
                raise Mismatch('%s: ours %r, kafka-python %r' % (path, ours, theirs))
            return
        if not isinstance(theirs, list) or len(theirs) != len(ours):
            raise Mismatch('%s: ours %d elements, kafka-python %r' % (path, len(ours), theirs))
        for i, (o, t) in enumerate(zip(ours, theirs)):
            p = '%s[%d]' % (path, i)
            if f.fields is not None:
                compare_named(o, f.fields, t, tf, v, p, message)
            else:
                compare_simple(Field({'name': f.name, 'type': f.elem, 'versions': '0+'}, {}),
                               o, t, p)
    elif f.fields is not None:
        if ours is None or theirs is None:
            if ours is not theirs:
                raise Mismatch('%s: ours %r, kafka-python %r' % (path, ours, theirs))
            return
        compare_named(ours, f.fields, theirs, tf, v, path, message)
    else:
        compare_simple(f, ours, theirs, path)


# --------------------------------------------------------------------------------------------
# kafka-python's decoders

def kafka_python_version():
    import kafka
    return getattr(kafka, '__version__', '?')


def find_struct_classes():
    """(api_key, kind, version) -> {class name without _vN: hand-written Struct class}."""
    try:
        import kafka.protocol.old as pkg
        from kafka.protocol.old.api import Request, Response
    except ImportError:  # kafka-python 2.x
        import kafka.protocol as pkg
        from kafka.protocol.api import Request, Response
    found = {}
    for m in pkgutil.iter_modules(pkg.__path__):
        try:
            mod = importlib.import_module(pkg.__name__ + '.' + m.name)
        except Exception:  # pragma: no cover - a module kafka-python itself cannot import
            continue
        for name, cls in vars(mod).items():
            if not (isinstance(cls, type) and issubclass(cls, (Request, Response))):
                continue
            version = getattr(cls, 'API_VERSION', None)
            key = getattr(cls, 'API_KEY', None)
            if not isinstance(version, int) or not isinstance(key, int):
                continue
            if not hasattr(cls, 'SCHEMA') or not re.match(r'^[A-Za-z]+_v\d+$', name):
                continue
            kind = 'request' if cls.is_request() else 'response'
            found.setdefault((key, kind, version), {})[name.rsplit('_v', 1)[0]] = cls
    return found


def find_schema_classes():
    """(api_key, kind) -> schema-driven message class (kafka-python 3.x)."""
    try:
        import kafka.protocol as pkg
        from kafka.protocol.api_message import ApiMessage
    except ImportError:
        return {}
    found = {}
    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):
        if '.old' in m.name or m.name.endswith('generate_stubs'):
            continue
        try:
            mod = importlib.import_module(m.name)
        except Exception:
            continue
        for cls in vars(mod).values():
            if isinstance(cls, type) and issubclass(cls, ApiMessage) and cls is not ApiMessage \
                    and getattr(cls, '_json', None) and cls._class_version is None:
                found[(cls.API_KEY, cls.type)] = cls
    return found


def old_header_classes():
    try:
        from kafka.protocol.old import api
    except ImportError:  # kafka-python 2.x
        from kafka.protocol import api
    return {('request', 1): api.RequestHeader, ('request', 2): api.RequestHeaderV2,
            ('response', 0): api.ResponseHeader, ('response', 1): api.ResponseHeaderV2}


def decode_structs(cls, frame, case):
    buf = io.BytesIO(frame)
    # The header as Kafka's rule says; check_structs compares with the class's own choice.
    header = old_header_classes()[(case.kind, case.meta['header_version'])].decode(buf)
    body = cls.SCHEMA.decode(buf)
    rest = buf.read()
    return header, body, rest


def decode_schemas(cls, frame, v):
    data = memoryview(frame)
    hdr_buf = io.BytesIO(frame)
    header = cls.parse_header(hdr_buf, version=v)
    pos = hdr_buf.tell()
    flexible = cls.flexible_version_q(v)
    # The generic decoder, which `decode` also uses; called directly to learn how many bytes
    # it consumed, and to skip ApiVersionsResponse.decode's client policy (it re-reads any
    # response with a non-zero error code as version 0).
    fast = cls._struct.compiled_decode_from(v, compact=flexible, tagged=flexible,
                                            data_class=cls[None])
    body, end = fast(data, pos)
    if end > len(frame):
        # Slicing a memoryview past its end does not fail: a length that overruns the frame
        # would go unnoticed.
        raise Mismatch('kafka-python read %d bytes past the end of the frame' % (end - len(frame)))
    return header, body, frame[end:]


# --------------------------------------------------------------------------------------------

class Case:
    def __init__(self, meta, frame, variant=''):
        self.meta = meta
        self.frame = frame
        self.variant = variant
        self.api = meta['api']
        self.key = meta['api_key']
        self.version = meta['version']
        self.kind = meta['kind']
        self.message = meta['message']

    def label(self):
        return '%s v%d %s%s' % (self.api, self.version, self.kind,
                                 ' (%s)' % self.variant if self.variant else '')


def check_structs(case, cls, specs):
    fields, flex_range = specs.message(case.message)
    v = case.version
    flexible = in_range(flex_range, v)
    rule = old_header_classes()[(case.kind, case.meta['header_version'])]
    if cls.header_class() is not rule and (case.message, v) not in KNOWN_HEADER_QUIRKS:
        raise Mismatch('header: kafka-python reads it with %s, Kafka\'s rule says %s' % (
            cls.header_class().__name__, rule.__name__))
    header, body, rest = decode_structs(cls, case.frame, case)
    # Header.
    hdr = case.meta['header']
    hdr_tuple = tuple(getattr(header, n) for n in header.SCHEMA.names)
    if case.kind == 'request':
        want = (hdr['request_api_key'], hdr['request_api_version'], hdr['correlation_id'],
                hdr['client_id'])
    else:
        want = (hdr['correlation_id'],)
    got = hdr_tuple[:len(want)]
    if got != want:
        raise Mismatch('header: ours %r, kafka-python %r' % (want, got))
    extra = hdr_tuple[len(want):]
    if extra not in ((), ({},), (None,)):
        raise Mismatch('header: unexpected extra fields %r' % (extra,))
    compare_positional(case.meta['body'], fields, body, v, flexible, case.message)
    if rest:
        raise Mismatch('%d bytes left after kafka-python decoded the frame' % len(rest))


def tags_inside_tagged_struct(obj, fields, v, inside=False):
    """Whether a struct reached through a tagged field carries tagged fields of its own."""
    if obj is None:
        return False
    if inside and (obj.get('unknown_tagged_fields') or any(
            f.present(v) and f.tagged(v) and not is_default(f, obj[f.key]) for f in fields)):
        return True
    for f in fields:
        if f.fields is None or not f.present(v):
            continue
        below = inside or (f.tagged(v) and not is_default(f, obj[f.key]))
        items = obj[f.key] if f.elem is not None else [obj[f.key]]
        for item in items or []:
            if tags_inside_tagged_struct(item, f.fields, v, below):
                return True
    return False


class PeerLimit(Exception):
    pass


def check_schemas(case, cls, specs):
    fields, _ = specs.message(case.message)
    v = case.version
    if tags_inside_tagged_struct(case.meta['body'], fields, v):
        raise PeerLimit('a struct inside a tagged field has tagged fields of its own, which '
                        'kafka-python cannot read (it expects an empty tag section there)')
    header, body, rest = decode_schemas(cls, case.frame, v)
    hdr = case.meta['header']
    if case.kind == 'request':
        got = (header.request_api_key, header.request_api_version, header.correlation_id,
               header.client_id)
        want = (hdr['request_api_key'], hdr['request_api_version'], hdr['correlation_id'],
                hdr['client_id'])
    else:
        got, want = (header.correlation_id,), (hdr['correlation_id'],)
    if got != want:
        raise Mismatch('header: ours %r, kafka-python %r' % (want, got))
    compare_named(case.meta['body'], fields, body, cls._struct, v, case.message, case.message)
    if rest:
        raise Mismatch('%d bytes left after kafka-python decoded the frame' % len(rest))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('dir')
    ap.add_argument('--specs', default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..', 'shared',
        'kafka-protocol-specs'))
    ap.add_argument('--new-specs', default=None,
                    help="Kafka 4.4's schemas, merged with --specs as the generator does")
    ap.add_argument('--verbose', action='store_true')
    args = ap.parse_args()

    try:
        version = kafka_python_version()
    except ImportError as e:
        print('kafka-python is not installed: %s' % e, file=sys.stderr)
        return 2
    if not os.path.isdir(args.specs):
        print('Kafka schemas not found at %s (pass --specs)' % args.specs, file=sys.stderr)
        return 2
    if args.new_specs is not None and not os.path.isdir(args.new_specs):
        print('Kafka 4.4 schemas not found at %s' % args.new_specs, file=sys.stderr)
        return 2
    specs = Specs(args.specs, args.new_specs)
    structs = find_struct_classes()
    schemas = find_schema_classes()
    print('kafka-python %s: %d hand-written struct classes, %d schema-driven messages' % (
        version, len(structs), len(schemas)))

    cases = []
    for path in sorted(glob.glob(os.path.join(args.dir, '*.json'))):
        with open(path, encoding='utf-8') as f:
            meta = json.load(f)
        with open(path[:-5] + '.bin', 'rb') as f:
            variant = 'no unknown tags' if path.endswith('-plain.json') else ''
            cases.append(Case(meta, f.read(), variant))
    if not cases:
        print('no cases in %s' % args.dir, file=sys.stderr)
        return 2
    cases.sort(key=lambda c: (c.key, c.kind != 'request', c.version, c.variant))

    passed, failed, skipped = [], [], []
    peer_apis = {k for (k, _, _) in structs} | {k for (k, _) in schemas}
    absent_apis = set()
    for case in cases:
        if case.key not in peer_apis:
            absent_apis.add(case.api)
            continue
        layers = []
        named = structs.get((case.key, case.kind, case.version), {})
        # Prefer the class named like the schema (ApiVersionsResponse over
        # BaseApiVersionsResponse).
        cls = named.get(case.message) or (named[sorted(named)[0]] if named else None)
        if cls is None:
            skipped.append((case, 'structs', 'no hand-written class for this version'))
        else:
            layers.append(('structs', cls, check_structs))
        scls = schemas.get((case.key, case.kind))
        if scls is None:
            skipped.append((case, 'schemas', 'no schema-driven class for this api'))
        elif not 0 <= case.version <= scls.max_version:
            # kafka-python accepts every version from 0 up to its bundled schema's newest
            # (its schemas are Kafka 4.x ones, which dropped some old versions, but it keeps
            # them usable for old brokers), so those are checked too.
            skipped.append((case, 'schemas', 'newer than its bundled schema (max v%d)'
                            % scls.max_version))
        else:
            layers.append(('schemas', scls[case.version], check_schemas))
        for layer, klass, check in layers:
            limit = KNOWN_PEER_LIMITS.get((layer, case.message, case.version)) or \
                KNOWN_PEER_LIMITS.get((layer, case.message, None))
            if limit is not None:
                skipped.append((case, layer, limit))
                continue
            try:
                check(case, klass, specs)
            except PeerLimit as e:
                skipped.append((case, layer, str(e)))
            except Mismatch as e:
                failed.append((case, layer, str(e)))
            except Exception as e:  # a decoder that raised is a failure too
                failed.append((case, layer, '%s: %s' % (type(e).__name__, e)))
            else:
                passed.append((case, layer))

    for case, layer, why in failed:
        print('FAIL %s [%s]: %s' % (case.label(), layer, why))
    # Skips, grouped: api, layer, reason -> versions.
    groups = {}
    for case, layer, why in skipped:
        kind = case.kind + (' (%s)' % case.variant if case.variant else '')
        groups.setdefault((case.key, case.api, kind, layer, why), []).append(case.version)
    for (_, api, kind, layer, why), vs in sorted(groups.items()):
        print('skip %s %s v%s [%s]: %s' % (api, kind, compress(vs), layer, why))
    if absent_apis:
        print('skip (kafka-python has no class at all): %s' % ', '.join(sorted(absent_apis)))
    # What passed, per api.
    ok = {}
    for case, layer in passed:
        ok.setdefault((case.key, case.api), {}).setdefault((case.kind, layer), []).append(
            case.version)
    for (_, api), kinds in sorted(ok.items()):
        parts = ['%s %s v%s' % ('req' if kind == 'request' else 'resp', layer, compress(vs))
                 for (kind, layer), vs in sorted(kinds.items())]
        print('ok %s: %s' % (api, '; '.join(parts)))
    pairs = {(c.api, c.version, c.kind) for c, _ in passed}
    failed_pairs = {(c.api, c.version, c.kind) for c, _, _ in failed}
    print('apis checked: %d' % len({c.api for c, _ in passed}))
    print('cases checked: %d' % len(pairs - failed_pairs))
    print('crosscheck: %d passed, %d failed, %d skipped' % (len(passed), len(failed),
                                                           len(skipped)))
    return 1 if failed else 0


def compress(vs):
    vs = sorted(set(vs))
    out, start = [], None
    for i, v in enumerate(vs):
        if start is None:
            start = v
        if i + 1 == len(vs) or vs[i + 1] != v + 1:
            out.append(str(start) if start == v else '%d-%d' % (start, v))
            start = None
    return ','.join(out)


if __name__ == '__main__':
    sys.exit(main())
