# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The linear strategy, for plays on hundreds of hosts (the rollout role).

Ansible starts a worker process per host for each task, by fork() of the
controller. A controller that has run tasks on a thousand hosts holds
their results, hundreds of thousands of Python objects. Python's cyclic
garbage collector, in each worker, goes through all of them (a forked
child inherits the parent's collector counters), and in doing so writes
to every page that holds them, which the kernel must then copy for that
worker. Measured with rdmaform's rollout bench (1,000 simulated hosts, 2
CPUs): a wave of 200 hosts took 38 s to start where later waves took 15 s,
and the workers held about 90 MB each.

This strategy is linear, but before the workers of each task are
forked it collects the controller's garbage once and then freezes what
is left (gc.freeze): the workers' collections skip those objects. The
controller's own garbage is collected again at the next task.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = '''
    name: fleet
    short_description: The linear strategy, for plays on hundreds of hosts
    description:
        - Runs a play as the linear strategy does (task after task, each on every host of the batch, up to C(forks) at once).
        - Before the worker processes of each task start, it collects the controller's garbage and freezes the remaining objects
          (Python's gc.freeze), so that the garbage collection in each worker does not go through the controller's objects (the
          results of the hosts so far). On a thousand hosts that made each worker slower to start and larger in memory.
        - "The rollout role's example playbook runs its plays on hosts with it: C(strategy: rdmaform.rdma.fleet)."
    version_added: 0.1.0
    author: rdmaform developers
'''

import gc

from ansible.plugins.strategy.linear import StrategyModule as LinearStrategyModule


class StrategyModule(LinearStrategyModule):
    """Linear, with the controller's objects frozen before each task forks
    its workers."""

    def __init__(self, tqm):
        super(StrategyModule, self).__init__(tqm)
        self._frozen_for = None

    def _queue_task(self, host, task, task_vars, play_context):
        # Once per task (its first host): collect, then freeze what is
        # left, so that every worker of the task starts from a frozen heap.
        if self._frozen_for != task._uuid:
            self._frozen_for = task._uuid
            gc.unfreeze()
            gc.collect()
            gc.freeze()
        return super(StrategyModule, self)._queue_task(host, task, task_vars, play_context)
