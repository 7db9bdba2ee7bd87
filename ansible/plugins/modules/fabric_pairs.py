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
      - When round 0 starts, in seconds since the epoch.
    type: float
    required: true
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
'''

import json
import os
import shutil
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


def main():
    module = AnsibleModule(
        argument_spec=dict(
            command=dict(type='list', elements='str', required=True),
            host=dict(type='str', required=True),
            address=dict(type='str', required=True),
            rounds=dict(type='list', elements='dict', required=True),
            bandwidth=dict(type='dict', required=True),
            latency=dict(type='dict', required=True),
            start=dict(type='float', required=True),
            slot=dict(type='int', required=True),
            lead=dict(type='float', default=1),
        ),
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
    work = tempfile.mkdtemp(prefix='rdmaform-fabric-')
    results, served = [], 0
    try:
        for r in sorted(p['rounds'], key=lambda r: r['round']):
            begin = p['start'] + r['round'] * p['slot']
            end = begin + p['slot']
            pair = [p['host'], r['peer']] if r['serve'] else [r['peer'], p['host']]
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
    module.exit_json(changed=False, measured=results, served=served)


if __name__ == '__main__':
    main()
