# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Run the rdmaform binary that matches the host's architecture.

Ansible copies a binary module to the host as it is and has no notion of
architectures, so the collection ships one static build per architecture
(rdmaform_x86_64, rdmaform_aarch64) and this action plugin picks it: from
the gathered fact ansible_architecture when there is one, else from the
fact rdmaform_architecture, else from `uname -m` on the host, which it
then keeps as the fact rdmaform_architecture so that the host's next
rdmaform task runs one command fewer (a fleet rollout runs several on
every host). A delegated task neither reads nor keeps the fact: it runs
on another host than the one the facts belong to. Check mode, diff mode
and the arguments pass through unchanged.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.plugins.action import ActionBase

# uname -m (and Ansible's architecture fact) -> the module's suffix.
ARCHITECTURES = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "aarch64",
}


# The fact that keeps what `uname -m` said on the host.
FACT = "rdmaform_architecture"


class ActionModule(ActionBase):
    """Dispatch rdmaform.rdma.rdmaform to rdmaform.rdma.rdmaform_<arch>."""

    def run(self, tmp=None, task_vars=None):
        if task_vars is None:
            task_vars = {}
        result = super().run(tmp, task_vars)
        del tmp  # not used since ansible-core 2.x; the module gets its own

        facts = task_vars.get("ansible_facts") or {}
        delegated = self._task.delegate_to is not None
        machine = None if delegated else facts.get("architecture") or task_vars.get(FACT)
        probed = not machine
        if probed:
            probe = self._low_level_execute_command("uname -m")
            if probe.get("rc") != 0:
                result.update(failed=True, msg="rdmaform: could not tell the host's architecture: uname -m failed: %s"
                              % (probe.get("stderr") or probe.get("stdout") or "rc %s" % probe.get("rc")).strip())
                return result
            machine = probe.get("stdout", "").strip()
        arch = ARCHITECTURES.get(machine)
        if arch is None:
            result.update(failed=True, msg="rdmaform: no build for architecture %r (there are %s)"
                          % (machine, ", ".join(sorted(set(ARCHITECTURES.values())))))
            return result

        module = "rdmaform.rdma.rdmaform_" + arch
        result.update(self._execute_module(module_name=module, module_args=self._task.args, task_vars=task_vars))
        if probed and not delegated:
            result.setdefault("ansible_facts", {})[FACT] = machine
        return result
