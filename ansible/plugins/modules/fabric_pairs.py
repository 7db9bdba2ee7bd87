#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
#
# rdmaform.rdma.fabric_pairs: one host's part of a fabric test's rounds.
# Every host of the test runs it at once (the role rdmaform.rdma.fabric_test
# starts it asynchronously on all of them); each round has a time slot
# that starts at the same instant on every host (start + round's index x
# slot), so the pairs of a round run together and no host is in two
# pairs at a time, without a round trip through Ansible per round.
# The start is the barrier's: one host (the leader) waits until every
# host of the pass has started its part and said so over TCP, then
# tells them all the same start, a moment later. However long Ansible
# takes to start the task on every host, no round begins before the
# last host is ready.
# Every command runs as an argument vector, never through a shell.
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: fabric_pairs
short_description: Run one host's pairs of a fabric test, round after round, in time slots shared by every host
version_added: 0.1.0
author:
  - rdmaform developers
description:
  - Runs this host's part of the rounds of a fabric test (rdmaform fabric-test schedule or retest), each round in its time slot,
    from C(start) (seconds since the epoch, the same on every host) plus C(slot) seconds a round.
  - In a pair the host serving runs C(rdmaform probe serve -f SPEC --for D) for the slot, where SPEC holds the bandwidth and
    latency probes to its own address; the other host waits C(lead) seconds (the server's start), then runs
    C(rdmaform probe -f SPEC -o json) with the probes to the server's address, and reports the pair's bandwidth (one direction,
    Gb/s) and latency (microseconds), or the error of a run that failed, as a result of the fabric test's results file.
  - A run that does not end within its slot is stopped and is an error of its pair; a slot already over when the host reaches
    it (the module started late) is an error too. The hosts' clocks must agree to well under C(lead) (NTP or PTP).
  - Nothing on the host changes; the probes send test traffic.
options:
  command:
    description:
      - The rdmaform program on the host and the arguments that come before the subcommand (C([rdmaform]), or
        C([rdmaform, --sim, DIR]) for a simulated host).
    type: list
    elements: str
    required: true
  host:
    description:
      - This host's name in the schedule (its inventory name).
    type: str
    required: true
  address:
    description:
      - This host's address, the one its peers' probes go to (host variable rdmaform_probe_address).
    type: str
    required: true
  rounds:
    description:
      - This host's part of each round it is in, C({round, peer, peer_address, serve}); C(round) is the round's index (its slot).
    type: list
    elements: dict
    required: true
  bandwidth:
    description:
      - The bandwidth probe's settings (rdmaform's C(bandwidth) probe without C(to)), such as C(netdev), C(duration), C(size).
    type: dict
    required: true
  latency:
    description:
      - The latency probe's settings (rdmaform's C(latency) probe without C(to)); the results file needs both figures.
    type: dict
    required: true
  start:
    description:
      - When round 0 starts, in seconds since the epoch, the same on every host; or C(barrier).
    type: float
  barrier:
    description:
      - Round 0 starts when every host of the pass is ready, 2 seconds after the last one said so. The leader listens
        on C(address):C(port) until each of C(hosts) has connected or C(timeout) seconds have passed, then answers every host
        with the same start and the hosts that never came (absent); the others connect there (again and again until it
        answers, within C(timeout) seconds) and wait for that answer.
      - A pair with an absent host is an error of the pair (its client reports it); a host that gets no answer measures
        nothing and reports each of its pairs as an error.
    type: dict
    suboptions:
      address:
        description: The leader's address (an IP address; the leader binds to it).
        type: str
        required: true
      port:
        description: The leader's TCP port.
        type: int
        required: true
      leader:
        description: This host is the leader.
        type: bool
        default: false
      hosts:
        description: The hosts of the pass (the leader's list; the others need not give it).
        type: list
        elements: str
        default: []
      token:
        description: The pass's token, the same on every host; a host of another pass (or a stale leader) is refused.
        type: str
        required: true
      timeout:
        description: Seconds to wait for every host (the leader) or for the leader's answer (the others), 1 to 3600.
        type: int
        default: 600
  slot:
    description:
      - Seconds a round; the server answers for C(slot - 1) seconds, the client must be done by the slot's end.
    type: int
    required: true
  lead:
    description:
      - Seconds the client waits into the slot before it measures (the server's start).
    type: float
    default: 1
'''

RETURN = r'''
measured:
  description: The pairs this host measured (it was the client), as the results file of rdmaform fabric-test has them.
  returned: always
  type: list
  elements: dict
  sample: [{"hosts": ["node001", "node002"], "bandwidth_gbps": 194.0, "latency_us": 1.02}]
served:
  description: How many rounds this host served.
  returned: always
  type: int
start:
  description: When round 0 started, in seconds since the epoch (the barrier's answer, or C(start)); absent when no answer came.
  returned: when known
  type: float
waited:
  description: Seconds this host waited at the barrier, from its start to round 0.
  returned: with barrier
  type: float
absent:
  description: The hosts of the pass that never reached the barrier (the leader's answer).
  returned: with barrier
  type: list
  elements: str
'''

import json
import os
import resource
import shutil
import socket
import subprocess
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule

PROBE_BW = 'fabric-bw'
PROBE_LAT = 'fabric-lat'


def spec_for(params, to):
    """The probes' spec, as JSON (a YAML document), to the address to."""
    bw = dict(params['bandwidth'])
    bw['to'] = to
    lat = dict(params['latency'])
    lat['to'] = to
    probes = [{'name': PROBE_BW, 'bandwidth': bw}, {'name': PROBE_LAT, 'latency': lat}]
    return json.dumps({'version': 1, 'probes': probes}, sort_keys=True)


def run(argv, timeout):
    """Runs argv for at most timeout seconds: (exit code, stdout, stderr),
    exit code None when it was stopped."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, LC_ALL='C'))
    try:
        out, err = p.communicate(timeout=max(timeout, 0.1))
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return None, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')
    return p.returncode, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')


def measured(rc, out, err, argv):
    """The figures of one client run, or its error: (bandwidth, latency,
    error)."""
    cmd = ' '.join(argv)
    if rc is None:
        return None, None, '%s did not finish within its slot' % cmd
    try:
        doc = json.loads(out)
    except ValueError:
        return None, None, '%s (exit %d): %s' % (cmd, rc, (err or out).strip()[:500])
    by = dict((r.get('name'), r) for r in doc.get('probes') or [])
    figures = {}
    for name, key in ((PROBE_BW, 'bandwidth_gbps'), (PROBE_LAT, 'latency_us')):
        r = by.get(name)
        if r is None:
            return None, None, '%s (exit %d) printed no result of %s: %s' % (cmd, rc, name, (err or out).strip()[:500])
        if r.get('outcome') != 'passed':
            return None, None, '%s %s: %s' % (name, r.get('outcome'), r.get('reason', ''))
        v = (r.get('perf') or {}).get(key)
        if not isinstance(v, (int, float)) or v <= 0:
            return None, None, '%s: no %s in its result' % (name, key)
        figures[key] = v
    return figures['bandwidth_gbps'], figures['latency_us'], None


# Round 0 starts this many seconds after the leader's answer: the time
# its answer takes to reach every host and wake its part.
MARGIN = 2

# A barrier message is one line of JSON; none is longer than this (the
# leader's answer lists the absent hosts).
MAX_LINE = 1 << 20


def read_line(conn, deadline):
    """One line from conn, read until deadline (seconds since the epoch):
    its JSON document, or None when the peer closed, timed out or sent
    something else."""
    buf = b''
    while b'\n' not in buf:
        left = deadline - time.time()
        if left <= 0 or len(buf) > MAX_LINE:
            return None
        conn.settimeout(left)
        try:
            chunk = conn.recv(65536)
        except (socket.timeout, OSError):
            return None
        if not chunk:
            return None
        buf += chunk
    try:
        doc = json.loads(buf.split(b'\n', 1)[0].decode('utf-8'))
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def send_line(conn, doc):
    try:
        conn.settimeout(5)
        conn.sendall((json.dumps(doc, sort_keys=True) + '\n').encode('utf-8'))
    except OSError:
        pass


def lead(b, me):
    """The leader: wait until every host of the pass has connected (or
    the timeout), then answer them all with one start. Returns (start,
    absent hosts, the leader's timeout, error)."""
    deadline = time.time() + b['timeout']
    try:
        info = socket.getaddrinfo(b['address'], b['port'], 0, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)[0]
        srv = socket.socket(info[0], socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(info[4])
        srv.listen(min(len(b['hosts']) + 16, 4096))
    except (OSError, socket.gaierror, IndexError) as e:
        return None, None, None, 'the barrier cannot listen on %s port %d: %s' % (b['address'], b['port'], e)
    expect = set(b['hosts']) - set([me])
    # One open connection per host until the answer: a thousand hosts
    # need more descriptors than the usual soft limit of 1,024.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = len(expect) + 64
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))
    ready = {}
    try:
        while expect - set(ready) and time.time() < deadline:
            srv.settimeout(max(min(deadline - time.time(), 1), 0.01))
            try:
                conn, _ = srv.accept()
            except (socket.timeout, OSError):
                continue
            hello = read_line(conn, min(time.time() + 10, deadline))
            host = (hello or {}).get('host')
            if hello is None or hello.get('token') != b['token']:
                send_line(conn, {'error': 'not a host of this pass (token %s)' % b['token']})
                conn.close()
                continue
            if host not in expect:
                send_line(conn, {'error': '%s is not a host of this pass' % host})
                conn.close()
                continue
            if host in ready:
                ready[host].close()
            ready[host] = conn
    finally:
        srv.close()
    start = time.time() + MARGIN
    absent = sorted(expect - set(ready))
    for conn in ready.values():
        send_line(conn, {'start': start, 'absent': absent, 'timeout': b['timeout']})
        conn.close()
    return start, absent, b['timeout'], None


def follow(b, me):
    """One of the others: connect to the leader (again until it
    answers, within the timeout), say who this host is and wait for the
    start. Returns (start, absent hosts, the leader's timeout, error)."""
    deadline = time.time() + b['timeout']
    why = 'no answer'
    while time.time() < deadline:
        try:
            conn = socket.create_connection((b['address'], b['port']), timeout=max(min(deadline - time.time(), 5), 0.1))
        except OSError as e:
            why = str(e)
            time.sleep(min(0.5, max(deadline - time.time(), 0)))
            continue
        try:
            send_line(conn, {'host': me, 'token': b['token']})
            # The leader answers within its timeout of its own start,
            # which came before this connection.
            reply = read_line(conn, time.time() + b['timeout'] + 30)
        finally:
            conn.close()
        if reply is None:
            why = 'the leader closed the connection without a start'
            time.sleep(0.5)
            continue
        if 'error' in reply:
            return None, None, None, 'the barrier at %s port %d refused %s: %s' % (b['address'], b['port'], me, reply['error'])
        start, absent, waited = reply.get('start'), reply.get('absent'), reply.get('timeout')
        if not isinstance(start, (int, float)) or not isinstance(absent, list) or not isinstance(waited, int):
            return None, None, None, 'the barrier at %s port %d answered %r' % (b['address'], b['port'], reply)
        return float(start), [str(h) for h in absent], waited, None
    return None, None, None, 'no start from the barrier at %s port %d within %ds: %s' % (b['address'], b['port'], b['timeout'], why)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            command=dict(type='list', elements='str', required=True),
            host=dict(type='str', required=True),
            address=dict(type='str', required=True),
            rounds=dict(type='list', elements='dict', required=True),
            bandwidth=dict(type='dict', required=True),
            latency=dict(type='dict', required=True),
            start=dict(type='float'),
            barrier=dict(type='dict', options=dict(
                address=dict(type='str', required=True),
                port=dict(type='int', required=True),
                leader=dict(type='bool', default=False),
                hosts=dict(type='list', elements='str', default=[]),
                token=dict(type='str', required=True, no_log=False),
                timeout=dict(type='int', default=600),
            )),
            slot=dict(type='int', required=True),
            lead=dict(type='float', default=1),
        ),
        required_one_of=[('start', 'barrier')],
        mutually_exclusive=[('start', 'barrier')],
    )
    p = module.params
    if not p['command']:
        module.fail_json(msg='command must name the rdmaform program')
    if p['slot'] < 2:
        module.fail_json(msg='slot must be 2 seconds or more, not %d' % p['slot'])
    if not 0 < p['lead'] < p['slot'] - 1:
        module.fail_json(msg='lead must be above 0 and under slot - 1 (%d) seconds, not %s' % (p['slot'] - 1, p['lead']))
    for r in p['rounds']:
        if not isinstance(r.get('round'), int) or r['round'] < 0 or not r.get('peer') or not r.get('peer_address'):
            module.fail_json(msg='a round needs round (0 or more), peer and peer_address: %r' % (r,))
    b = p['barrier']
    if b is not None:
        if not 1 <= b['timeout'] <= 3600:
            module.fail_json(msg='barrier timeout must be 1 to 3600 seconds, not %d' % b['timeout'])
        if not 1 <= b['port'] <= 65535:
            module.fail_json(msg='barrier port must be 1 to 65535, not %d' % b['port'])
    ret = {}
    absent = set()
    start = p['start']
    if b is not None:
        began = time.time()
        start, gone, waited, error = (lead if b['leader'] else follow)(b, p['host'])
        if error is not None and b['leader']:
            # Nobody can start: the others wait out their timeout.
            module.fail_json(msg=error)
        ret['waited'] = round(time.time() - began, 3)
        if error is not None:
            results = [{'hosts': [p['host'], r['peer']] if r['serve'] else [r['peer'], p['host']], 'error': error}
                       for r in sorted(p['rounds'], key=lambda r: r['round']) if not r['serve']]
            module.exit_json(changed=False, measured=results, served=0, absent=[], **ret)
        absent = set(gone)
        ret['absent'] = gone
    ret['start'] = start
    work = tempfile.mkdtemp(prefix='rdmaform-fabric-')
    results, served = [], 0
    try:
        for r in sorted(p['rounds'], key=lambda r: r['round']):
            begin = start + r['round'] * p['slot']
            end = begin + p['slot']
            pair = [p['host'], r['peer']] if r['serve'] else [r['peer'], p['host']]
            if r['peer'] in absent:
                if not r['serve']:
                    results.append({'hosts': pair, 'error': '%s was not ready at the barrier within %ds (its part had not started)'
                                    % (r['peer'], waited)})
                continue
            now = time.time()
            if now >= end - 1:
                if not r['serve']:
                    results.append({'hosts': pair, 'error': '%s reached round %d %.1fs after its slot began: too late to measure'
                                    % (p['host'], r['round'], now - begin)})
                continue
            spec = os.path.join(work, 'round-%d.yaml' % r['round'])
            with open(spec, 'w') as f:
                # The server's spec is its client's: the probes to the server's own address.
                f.write(spec_for(p, p['address'] if r['serve'] else r['peer_address']))
            if r['serve']:
                time.sleep(max(begin - time.time(), 0))
                served += 1
                answer = max(int(end - 1 - time.time()), 1)
                argv = p['command'] + ['probe', 'serve', '-f', spec, '--for', '%ds' % answer]
                rc, out, err = run(argv, answer + 0.5)
                continue
            time.sleep(max(begin + p['lead'] - time.time(), 0))
            argv = p['command'] + ['probe', '-f', spec, '-o', 'json']
            rc, out, err = run(argv, end - 0.5 - time.time())
            bw, lat, error = measured(rc, out, err, argv)
            if error is not None:
                results.append({'hosts': pair, 'error': error})
                continue
            results.append({'hosts': pair, 'bandwidth_gbps': bw, 'latency_us': lat})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    module.exit_json(changed=False, measured=results, served=served, **ret)


if __name__ == '__main__':
    main()
