# A test callback: takes hosts down at a task of a wave, for the test
# connection flaky_local (testdata/connection_plugins). The rollout
# role's tests (ansible/unreachable_test.go) use it on simulated hosts.
#
# RDMAFORM_TEST_DOWN_AT holds rules, one a line: WAVE<TAB>TASK<TAB>HOST.
# When the task named TASK (its name as the play prints it, without the
# role) starts in wave WAVE of the waves play (the wave of the last task
# named "Phase 3 | wave N: ..."), the file RDMAFORM_TEST_DOWN_DIR/HOST is
# created: from then on every command on HOST, or on a task delegated to
# it, is a lost connection. The callback runs in the controller before
# the task's workers start, so the task itself finds the host down.
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = '''
    name: down_at
    type: aggregate
    short_description: takes hosts down at a given task of a wave (tests only)
    description:
        - Creates RDMAFORM_TEST_DOWN_DIR/HOST when a task named by a rule of RDMAFORM_TEST_DOWN_AT starts in its wave.
    author: rdmaform
'''

import os
import re

from ansible.plugins.callback import CallbackBase

WAVE = re.compile(r'^Phase 3 \| wave (\d+): ')


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'down_at'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self.wave = 0
        self.dir = os.environ.get('RDMAFORM_TEST_DOWN_DIR', '')
        self.rules = []
        for line in os.environ.get('RDMAFORM_TEST_DOWN_AT', '').splitlines():
            if not line.strip():
                continue
            wave, task, host = line.split('\t')
            self.rules.append((int(wave), task, host))

    def v2_playbook_on_task_start(self, task, is_conditional):
        name = task.name or ''
        m = WAVE.match(name)
        if m:
            self.wave = int(m.group(1))
        for wave, want, host in self.rules:
            if wave == self.wave and name == want:
                open(os.path.join(self.dir, host), 'a').close()
