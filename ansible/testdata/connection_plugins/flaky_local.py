# A test connection: Ansible's local connection, lost as an SSH session
# is. The rollout role's tests (ansible/lostconn_test.go) use it on
# simulated hosts.
#
# - A command whose process SIGKILL ended (the test kills the module's
#   process during a firmware reset, as a reset of the NIC that carries
#   SSH ends the session; the shell Ansible wraps it in exits 137, or the
#   process itself is -9) raises AnsibleConnectionFailure, as the ssh
#   connection does when ssh exits 255: the task is unreachable.
# - While the file RDMAFORM_TEST_DOWN_DIR/HOST exists, every command
#   raises it: the host does not come back.
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = '''
    name: flaky_local
    short_description: the local connection, lost as an SSH session is (tests only)
    description:
        - Runs on the controller like the local connection; a command killed by a signal, or any command while
          RDMAFORM_TEST_DOWN_DIR/HOST exists, is a lost connection (the host is unreachable).
    author: rdmaform
    extends_documentation_fragment:
        - connection_pipelining
'''

import os

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.connection.local import Connection as LocalConnection


class Connection(LocalConnection):
    transport = 'flaky_local'

    def _down(self):
        d = os.environ.get('RDMAFORM_TEST_DOWN_DIR', '')
        host = self._play_context.remote_addr or ''
        return d and host and os.path.exists(os.path.join(d, host))

    def exec_command(self, cmd, in_data=None, sudoable=True):
        if self._down():
            raise AnsibleConnectionFailure('flaky_local: %s is down (no route to host)' % self._play_context.remote_addr)
        rc, stdout, stderr = super(Connection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)
        if rc in (-9, 128 + 9):
            raise AnsibleConnectionFailure('flaky_local: the connection to %s was lost: its process was killed'
                                           % self._play_context.remote_addr)
        return rc, stdout, stderr

    def put_file(self, in_path, out_path):
        if self._down():
            raise AnsibleConnectionFailure('flaky_local: %s is down (no route to host)' % self._play_context.remote_addr)
        return super(Connection, self).put_file(in_path, out_path)
