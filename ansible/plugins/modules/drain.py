#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
#
# rdmaform.rdma.drain: take a node out of service before its RDMA
# adapters are activated (a firmware reset or a reboot) and put it back
# afterwards, through the scheduler that runs work on it: Slurm
# (scontrol) or Kubernetes (kubectl). Every command runs as an argument
# vector, never through a shell.
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: drain
short_description: Drain a node in Slurm or Kubernetes before an RDMA activation, and resume it after
version_added: 0.1.0
author:
  - rdmaform developers
description:
  - Takes one node out of service through its scheduler and waits until no work is left on it, or puts it back into service.
  - "C(backend=slurm) runs C(scontrol update nodename=NODE state=drain reason=REASON) and waits until Slurm reports the node DRAINED
    (no job left on it; DRAINING until then); C(state=resumed) runs C(scontrol update nodename=NODE state=resume) for a node
    whose drain reason is C(reason) only (see the notes).
    C(scontrol) finds the cluster as it always does (C(/etc/slurm/slurm.conf), or C(SLURM_CONF) in the task's environment)."
  - "C(backend=kubernetes) cordons a schedulable node and puts the annotation C(rdmaform.io/drain-reason) (the C(reason)) on it
    in one C(kubectl patch), then runs C(kubectl drain NODE) (evict or delete the node's pods, waiting up to C(timeout));
    C(state=resumed) uncordons the node and removes the annotation in one C(kubectl patch), for a node whose annotation
    holds C(reason) only (see the notes). Each patch carries the
    resourceVersion the module read, so a change made by someone else in between fails it."
  - Idempotent, a node already drained (Slurm DRAINED; Kubernetes cordoned with no pod left to evict) or already in service
    is left alone and reported with C(changed=false).
  - In check mode nothing is changed; C(changed) says whether a run would change the node.
  - A failed command fails the task with the command line and its standard error.
options:
  backend:
    description:
      - The scheduler that owns the node.
    type: str
    required: true
    choices: [slurm, kubernetes]
  node:
    description:
      - The node's name as the scheduler knows it (Slurm NodeName; Kubernetes Node object name).
    type: str
    required: true
  state:
    description:
      - C(drained) takes the node out of service and waits until nothing runs on it.
      - C(resumed) puts it back into service.
    type: str
    default: drained
    choices: [drained, resumed]
  reason:
    description:
      - Slurm's drain reason (C(scontrol show node) prints it); Kubernetes, the value of the node's annotation
        C(rdmaform.io/drain-reason). With C(state=resumed), the reason the node must have been drained with to be resumed.
    type: str
    default: rdmaform rollout
  timeout:
    description:
      - Seconds to wait for the node to be drained. When they pass, the task fails and the node stays drained (Slurm) or
        cordoned (Kubernetes), so no new work lands on it; resume it with C(state=resumed).
      - C(0) waits without limit for Kubernetes; for Slurm, C(0) sets the drain and returns without waiting.
    type: int
    default: 600
  poll:
    description:
      - Seconds between two looks at a Slurm node while waiting for it to be drained.
    type: int
    default: 2
  scontrol:
    description:
      - The scontrol program (a name looked up on PATH, or a path).
    type: str
    default: scontrol
  kubectl:
    description:
      - The kubectl program (a name looked up on PATH, or a path).
    type: str
    default: kubectl
  kubeconfig:
    description:
      - The kubeconfig kubectl uses (C(--kubeconfig)); kubectl's own default when unset.
    type: path
  context:
    description:
      - The kubeconfig context kubectl uses (C(--context)).
    type: str
  ignore_daemonsets:
    description:
      - Leave pods managed by a DaemonSet on the node (C(kubectl drain --ignore-daemonsets)); without it a node running
        one cannot be drained.
    type: bool
    default: true
  delete_emptydir_data:
    description:
      - Also evict pods that use emptyDir volumes, whose data is lost (C(--delete-emptydir-data)).
    type: bool
    default: false
  force:
    description:
      - Also delete pods that no controller manages, which nothing recreates (C(--force)).
    type: bool
    default: false
  evict:
    description:
      - Remove pods through the Eviction API, which honours PodDisruptionBudgets (a budget that allows no disruption
        makes the drain wait, then fail at C(timeout)).
      - C(false) deletes them directly (C(--disable-eviction)), bypassing every PodDisruptionBudget.
    type: bool
    default: true
  grace_period:
    description:
      - Seconds each pod gets to terminate (C(--grace-period)); each pod's own setting when unset.
    type: int
notes:
  - The node is named by the task's argument, not by the inventory host; delegate the task to a host that can run
    scontrol or kubectl against the cluster (a login node, the controller, a machine with a kubeconfig).
  - "Kubernetes: a node counts as drained when it is unschedulable and every pod still bound to it is one drain leaves
    (a DaemonSet's pod with C(ignore_daemonsets), a static mirror pod); a pod still terminating is not gone yet."
  - "Slurm: C(state=resumed) resumes only a node whose drain reason is C(reason), the one the drain set: a node
    someone else drained (a hardware fault, another reason; or drained before the drain task, which then left it
    alone) stays drained, and the task returns C(changed=false) with a warning and C(msg) naming that reason.
    Give the same C(reason) to both tasks."
  - "Kubernetes: C(state=resumed) uncordons only a node whose annotation C(rdmaform.io/drain-reason) is C(reason): a node
    cordoned without it (by a person or another tool, or before the drain task, which then evicts its pods but does not
    mark it) stays cordoned, and the task returns C(changed=false) with a warning and C(msg) saying why."
'''

EXAMPLES = r'''
- name: Drain the node in Slurm before the firmware reset
  rdmaform.rdma.drain:
    backend: slurm
    node: "{{ inventory_hostname_short }}"
    reason: "rdmaform: firmware {{ fw_version }}"
    timeout: 3600
  delegate_to: slurm-controller

- name: Put it back into service (only if the drain above set its reason)
  rdmaform.rdma.drain:
    backend: slurm
    node: "{{ inventory_hostname_short }}"
    reason: "rdmaform: firmware {{ fw_version }}"
    state: resumed
  delegate_to: slurm-controller

- name: Drain the Kubernetes node (PodDisruptionBudgets honoured)
  rdmaform.rdma.drain:
    backend: kubernetes
    node: "{{ inventory_hostname }}"
    kubeconfig: /etc/rdmaform/kubeconfig
    delete_emptydir_data: true
    timeout: 900
  delegate_to: localhost
'''

RETURN = r'''
node:
  description: The node's name.
  returned: always
  type: str
before:
  description:
    - The node's state before the task. Slurm, the State field of C(scontrol show node) (C(ALLOCATED+DRAIN));
      Kubernetes, C(schedulable) or C(cordoned).
  returned: always
  type: str
after:
  description: The node's state after the task, in the same words.
  returned: when the node was read again
  type: str
reason:
  description: Slurm's drain reason of the node after the task (empty when none).
  returned: backend is slurm
  type: str
pods:
  description: Kubernetes, the pods (NAMESPACE/NAME) the drain had to remove before the task.
  returned: backend is kubernetes
  type: list
  elements: str
cmd:
  description: The commands that changed the node, each as its argument vector.
  returned: always
  type: list
  elements: list
waited:
  description: Seconds spent waiting for the node to be drained.
  returned: backend is slurm and state is drained
  type: float
'''

import json
import re
import time

from ansible.module_utils.basic import AnsibleModule

# scontrol show node -o prints one line of Key=Value fields; Reason comes
# last and may hold spaces.
STATE_RE = re.compile(r'(?:^|\s)State=(\S+)')
REASON_RE = re.compile(r'(?:^|\s)Reason=(.*)$')

# Base states (the word before the first "+") under which jobs still hold
# the node; with the DRAIN flag Slurm calls them DRAINING, and DRAINED
# once the base state is IDLE or DOWN.
BUSY_STATES = ('ALLOCATED', 'MIXED', 'COMPLETING')

# kubectl's node names are DNS subdomains; Slurm's may not start with "-"
# (it would be taken for an option) and hold no space, "=" or ",".
SLURM_NODE_RE = re.compile(r'^[A-Za-z0-9_.][A-Za-z0-9_.\-]*$')
K8S_NODE_RE = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')

# The annotation the kubernetes drain puts on a node it cordons, in the
# same patch, holding the drain's reason: a resume uncordons only a node
# that carries it with its own reason, and removes it in the same patch.
K8S_MARK = 'rdmaform.io/drain-reason'


class Runner(object):
    """Runs a tool with an argument vector and fails the task, with the
    command line and its standard error, when it exits non-zero."""

    def __init__(self, module, tool):
        self.module = module
        self.tool = tool

    def __call__(self, args, check=True):
        argv = [self.tool] + args
        rc, out, err = self.module.run_command(argv, environ_update={'LC_ALL': 'C'})
        if check and rc != 0:
            self.module.fail_json(msg='%s failed (exit %d): %s' % (' '.join(argv), rc, (err or out).strip()),
                                  cmd=argv, rc=rc, stdout=out, stderr=err)
        return rc, out, err


def tool_path(module, option):
    name = module.params[option]
    if '/' in name:
        return name
    path = module.get_bin_path(name)
    if path is None:
        module.fail_json(msg='%s is not on PATH (give its path in the option %s)' % (name, option))
    return path


def slurm_state(line):
    """The State field and Reason of one `scontrol show node -o` line."""
    m = STATE_RE.search(line)
    if m is None:
        return None, ''
    r = REASON_RE.search(line)
    reason = r.group(1).strip() if r else ''
    if reason == '(null)':
        reason = ''
    return m.group(1), reason


def slurm_ours(reason, want):
    """Whether a node's drain reason, as scontrol show node prints it, is
    want: Slurm prints the reason given to scontrol update followed by
    " [USER@TIME]" (slurm_sprint_node_table, src/api/node_info.c)."""
    return reason == want or (reason.startswith(want + ' [') and reason.endswith(']'))


def slurm_flags(state):
    """(drain flag set, drained): DRAINED is the DRAIN flag with no job
    left (the base state is not busy and the node is not COMPLETING)."""
    words = state.upper().split('+')
    drain = 'DRAIN' in words[1:] or words[0] in ('DRAINED', 'DRAINING')
    busy = words[0] in BUSY_STATES or 'COMPLETING' in words[1:] or words[0] == 'DRAINING'
    return drain, drain and not busy


def slurm(module):
    p = module.params
    node = p['node']
    if not SLURM_NODE_RE.match(node):
        module.fail_json(msg='node %r is not a Slurm node name' % node)
    if p['reason'] is None or p['reason'].strip() == '':
        module.fail_json(msg='reason must not be empty: Slurm refuses a drain without one')
    run = Runner(module, tool_path(module, 'scontrol'))

    def show():
        argv = ['show', 'node', '-o', node]
        rc, out, err = run(argv)
        state, reason = slurm_state(out)
        if state is None:
            module.fail_json(msg='%s %s printed no State field: %s' % (run.tool, ' '.join(argv), out.strip()),
                             cmd=[run.tool] + argv, stdout=out)
        return state, reason

    before, reason = show()
    drain, drained = slurm_flags(before)
    result = dict(changed=False, node=node, backend='slurm', before=before, reason=reason, cmd=[])
    result['diff'] = dict(before='%s: %s\n' % (node, before))

    if p['state'] == 'resumed':
        if not drain:
            result['after'] = before
            result['diff']['after'] = result['diff']['before']
            module.exit_json(**result)
        if not slurm_ours(reason, p['reason']):
            # Someone else drained the node (a hardware fault, a person):
            # it is theirs to resume.
            result['after'] = before
            result['diff']['after'] = result['diff']['before']
            result['msg'] = ('node %s stays drained: its drain reason is "%s", not "%s", so rdmaform did not drain it; '
                             'resume it with scontrol once that is dealt with' % (node, reason, p['reason']))
            module.warn(result['msg'])
            module.exit_json(**result)
        result['changed'] = True
        result['diff']['after'] = '%s: resumed\n' % node
        if module.check_mode:
            module.exit_json(**result)
        argv = ['update', 'nodename=' + node, 'state=resume']
        run(argv)
        result['cmd'].append([run.tool] + argv)
        result['after'], result['reason'] = show()
        result['diff']['after'] = '%s: %s\n' % (node, result['after'])
        module.exit_json(**result)

    if not drain:
        result['changed'] = True
        result['diff']['after'] = '%s: DRAINED (%s)\n' % (node, p['reason'])
        if module.check_mode:
            module.exit_json(**result)
        argv = ['update', 'nodename=' + node, 'state=drain', 'reason=' + p['reason']]
        run(argv)
        result['cmd'].append([run.tool] + argv)
    elif module.check_mode or drained:
        result['after'] = before
        result['diff']['after'] = result['diff']['before']
        module.exit_json(**result)

    start = time.time()
    state, reason = show()
    while p['timeout'] > 0 and not slurm_flags(state)[1]:
        waited = time.time() - start
        if waited >= p['timeout']:
            result.update(after=state, reason=reason, waited=round(waited, 1))
            result['diff']['after'] = '%s: %s\n' % (node, state)
            module.fail_json(msg='node %s is still DRAINING after %ds (State=%s): jobs still run on it; it stays drained in Slurm, '
                             'so nothing new starts there (resume it with state=resumed)' % (node, p['timeout'], state), **result)
        time.sleep(max(0, min(p['poll'], p['timeout'] - waited)))
        state, reason = show()
    result.update(after=state, reason=reason, waited=round(time.time() - start, 1))
    result['diff']['after'] = '%s: %s\n' % (node, state)
    module.exit_json(**result)


def k8s_blocking_pods(pods, ignore_daemonsets):
    """The pods (NAMESPACE/NAME) kubectl drain would still have to remove
    or wait for: every pod bound to the node, terminating ones too, except
    static mirror pods and, with ignore_daemonsets, a DaemonSet's."""
    left = []
    for pod in pods:
        meta = pod.get('metadata', {})
        if 'kubernetes.io/config.mirror' in (meta.get('annotations') or {}):
            continue
        owners = meta.get('ownerReferences') or []
        if ignore_daemonsets and any(o.get('kind') == 'DaemonSet' and o.get('controller') for o in owners):
            continue
        left.append('%s/%s' % (meta.get('namespace', ''), meta.get('name', '')))
    return sorted(left)


def kubernetes(module):
    p = module.params
    node = p['node']
    if not K8S_NODE_RE.match(node) or len(node) > 253:
        module.fail_json(msg='node %r is not a Kubernetes node name (a DNS subdomain)' % node)
    run = Runner(module, tool_path(module, 'kubectl'))
    base = []
    if p['kubeconfig']:
        base += ['--kubeconfig', p['kubeconfig']]
    if p['context']:
        base += ['--context', p['context']]

    def read():
        """The node's state (cordoned or schedulable), rdmaform's mark
        on it (None when it has none) and its resourceVersion."""
        argv = base + ['get', 'node', node, '-o', 'json']
        rc, out, err = run(argv)
        try:
            obj = json.loads(out)
        except ValueError as e:
            module.fail_json(msg='%s %s: not JSON (%s)' % (run.tool, ' '.join(argv), e), cmd=[run.tool] + argv, stdout=out)
        meta = obj.get('metadata') or {}
        state = 'cordoned' if (obj.get('spec') or {}).get('unschedulable') else 'schedulable'
        return state, (meta.get('annotations') or {}).get(K8S_MARK), meta.get('resourceVersion')

    def patch(unschedulable, mark, version):
        """Cordon or uncordon the node and set or remove the mark in one
        merge patch, which the API server applies only to the version
        read (someone else's change in between fails it)."""
        body = {'metadata': {'annotations': {K8S_MARK: mark}, 'resourceVersion': version},
                'spec': {'unschedulable': unschedulable}}
        argv = base + ['patch', 'node', node, '--type=merge', '-p', json.dumps(body, sort_keys=True)]
        run(argv)
        result['cmd'].append([run.tool] + argv)

    def pods():
        argv = base + ['get', 'pods', '--all-namespaces', '--field-selector', 'spec.nodeName=' + node, '-o', 'json']
        rc, out, err = run(argv)
        try:
            items = json.loads(out).get('items') or []
        except ValueError as e:
            module.fail_json(msg='%s %s: not JSON (%s)' % (run.tool, ' '.join(argv), e), cmd=[run.tool] + argv, stdout=out)
        return k8s_blocking_pods(items, p['ignore_daemonsets'])

    before, mark, version = read()
    result = dict(changed=False, node=node, backend='kubernetes', before=before, cmd=[])
    result['diff'] = dict(before='%s: %s\n' % (node, before))

    if p['state'] == 'resumed':
        result['pods'] = []
        if before == 'schedulable':
            result['after'] = before
            result['diff']['after'] = result['diff']['before']
            module.exit_json(**result)
        if mark != p['reason']:
            # Someone else cordoned the node (a person, another tool): it
            # is theirs to uncordon.
            result['after'] = before
            result['diff']['after'] = result['diff']['before']
            if mark is None:
                why = 'it has no %s annotation, so rdmaform did not cordon it' % K8S_MARK
            else:
                why = 'its %s annotation is "%s", not "%s"' % (K8S_MARK, mark, p['reason'])
            result['msg'] = 'node %s stays cordoned: %s; uncordon it with kubectl once that is dealt with' % (node, why)
            module.warn(result['msg'])
            module.exit_json(**result)
        result['changed'] = True
        result['diff']['after'] = '%s: schedulable\n' % node
        if module.check_mode:
            module.exit_json(**result)
        patch(None, None, version)
        result['after'] = read()[0]
        module.exit_json(**result)

    left = pods()
    result['pods'] = left
    if before == 'cordoned' and not left:
        result['after'] = before
        result['diff']['after'] = result['diff']['before']
        module.exit_json(**result)
    result['changed'] = True
    result['diff']['after'] = '%s: cordoned, %d pod(s) removed\n' % (node, len(left))
    if module.check_mode:
        module.exit_json(**result)
    if before == 'schedulable':
        patch(True, p['reason'], version)
    argv = base + ['drain', node, '--timeout=%ds' % p['timeout']]
    if p['ignore_daemonsets']:
        argv.append('--ignore-daemonsets')
    if p['delete_emptydir_data']:
        argv.append('--delete-emptydir-data')
    if p['force']:
        argv.append('--force')
    if not p['evict']:
        argv.append('--disable-eviction')
    if p['grace_period'] is not None:
        argv.append('--grace-period=%d' % p['grace_period'])
    rc, out, err = run(argv, check=False)
    result['cmd'].append([run.tool] + argv)
    if rc != 0:
        result['after'] = read()[0]
        result['diff']['after'] = '%s: %s\n' % (node, result['after'])
        module.fail_json(msg='%s failed (exit %d): %s' % (' '.join([run.tool] + argv), rc, (err or out).strip()),
                         rc=rc, stdout=out, stderr=err, **result)
    result['after'] = read()[0]
    result['diff']['after'] = '%s: %s\n' % (node, result['after'])
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            backend=dict(type='str', required=True, choices=['slurm', 'kubernetes']),
            node=dict(type='str', required=True),
            state=dict(type='str', default='drained', choices=['drained', 'resumed']),
            reason=dict(type='str', default='rdmaform rollout'),
            timeout=dict(type='int', default=600),
            poll=dict(type='int', default=2),
            scontrol=dict(type='str', default='scontrol'),
            kubectl=dict(type='str', default='kubectl'),
            kubeconfig=dict(type='path'),
            context=dict(type='str'),
            ignore_daemonsets=dict(type='bool', default=True),
            delete_emptydir_data=dict(type='bool', default=False),
            force=dict(type='bool', default=False),
            evict=dict(type='bool', default=True),
            grace_period=dict(type='int'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p['timeout'] < 0:
        module.fail_json(msg='timeout must be 0 or more seconds, not %d' % p['timeout'])
    if p['poll'] < 1:
        module.fail_json(msg='poll must be 1 second or more, not %d' % p['poll'])
    if p['grace_period'] is not None and p['grace_period'] < 0:
        module.fail_json(msg='grace_period must be 0 or more seconds, not %d' % p['grace_period'])
    if p['backend'] == 'slurm':
        slurm(module)
    else:
        kubernetes(module)


if __name__ == '__main__':
    main()
