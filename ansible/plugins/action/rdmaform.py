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

The module cache. Ansible copies a binary module to the host for every
task, and the binary is about 15 MB: a rollout wave of 250 hosts moved
3.75 GB through the controller for one task. So the plugin keeps the
binary on the host, in the directory rdmaform_module_cache (a variable:
/var/cache/rdmaform/ansible by default, "" for none), named by its
SHA-256, and runs it from there:
- a task runs one command on the host when the binary is there: the
  module, its arguments on standard input (or, where Ansible would not
  pipe a module's input, in a file of the task's temporary directory);
- when it is not, the binary is copied once, checked against its SHA-256
  and renamed into place (a killed copy leaves no half file under the
  name), and the other builds in the directory are removed;
- the directory and the file must be owned by the user the module runs
  as and writable by no one else, or the plugin does not use them (a
  file someone else could replace would run as root); the directories
  above it are not checked (the default's are root's);
- where the cache cannot be used (the user cannot create the directory,
  an async task, a connection that cannot pipe, a non-POSIX shell), the
  task runs as Ansible runs any binary module, copying it.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import json
import os
import shlex
import time

from ansible import constants as C
from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible.utils.unsafe_proxy import wrap_var
from ansible.vars.clean import remove_internal_keys

display = Display()

# uname -m (and Ansible's architecture fact) -> the module's suffix.
ARCHITECTURES = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "aarch64",
}


# The fact that keeps what `uname -m` said on the host.
FACT = "rdmaform_architecture"

# The variable naming the module cache's directory on the host, the
# controller's environment variable that sets its default instead, and
# the default; "" turns the cache off.
CACHE_VAR = "rdmaform_module_cache"
CACHE_ENV = "RDMAFORM_MODULE_CACHE"
CACHE_DEFAULT = "/var/cache/rdmaform/ansible"

# The module's argument that makes it read its arguments on standard
# input (ansible/module.go, StdinArg).
STDIN_ARG = "--rdmaform-ansible-args-stdin"

# What the cached run prints, alone, when the binary is not in the cache
# (or the cache is not safe to use), and what the install prints when it
# could not install it.
MISS = "rdmaform-module-cache: miss"
REFUSED = "rdmaform-module-cache: refused:"

# Shell functions for the cached run and the install: safe DIR_OR_FILE,
# owned by the effective user and writable by neither group nor others
# (ls -ld's mode: the 6th and 9th characters); unsafe_dir, which says
# why the directory is refused.
SAFE = ('safe() { [ -O "$1" ] || return 1; case $(ls -ld "$1") in ?????w*|????????w*) return 1;; esac; }; '
        'unsafe_dir() { echo %s the directory is not owned by uid $(id -u) or others may write it; }; ' % shlex.quote(REFUSED))


def sha256_of(path):
    """The SHA-256 of a file, hex. It is kept in the controller's local
    temporary directory for this run, under the file's identity (device,
    inode, size, modification time), so that the workers of later tasks
    read it rather than hash 15 MB each."""
    st = os.stat(path)
    memo = os.path.join(C.DEFAULT_LOCAL_TMP, "rdmaform-sha256-%d-%d-%d-%d" % (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    try:
        with open(memo) as f:
            digest = f.read().strip()
        if len(digest) == 64:
            return digest
    except (IOError, OSError):
        pass
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    digest = h.hexdigest()
    try:
        tmp = "%s.%d" % (memo, os.getpid())
        with open(tmp, "w") as f:
            f.write(digest)
        os.rename(tmp, memo)
    except (IOError, OSError):
        pass
    return digest


class ActionModule(ActionBase):
    """Dispatch rdmaform.rdma.rdmaform to rdmaform.rdma.rdmaform_<arch>."""

    def run(self, tmp=None, task_vars=None):
        if task_vars is None:
            task_vars = {}
        # reconnect_timeout is this plugin's, not the module's: with state
        # activated, how long a host whose connection was lost during the
        # task (a firmware reset of the NIC that carries it) has to be
        # reachable again.
        args = dict(self._task.args)
        reconnect = args.pop("reconnect_timeout", None)
        self._task.args = args
        if reconnect is None or args.get("state") != "activated":
            return self._run(tmp, task_vars)
        given = reconnect
        try:
            reconnect = int(reconnect)
        except (TypeError, ValueError):
            reconnect = -1
        if not 1 <= reconnect <= 86400:
            return dict(failed=True, msg="rdmaform: reconnect_timeout %r: want 1 to 86400 seconds" % (given,))
        try:
            return self._run(tmp, task_vars)
        except AnsibleConnectionFailure as e:
            lost = str(e)
        # The activation goes on, detached, on the host and records its
        # outcome there: wait for the host, then run the module again,
        # which returns that outcome.
        display.warning("rdmaform: the connection to %s was lost during the activation (%s); waiting up to %ds for it"
                        % (task_vars.get("inventory_hostname"), lost, reconnect))
        deadline = time.time() + reconnect
        last = lost
        while time.time() < deadline:
            time.sleep(1)
            try:
                self._connection.reset()
                if self._low_level_execute_command("true").get("rc") != 0:
                    continue
                result = self._run(None, task_vars)
                result["reconnected"] = True
                return result
            except AnsibleConnectionFailure as e:
                last = str(e)
        return dict(failed=True, reconnected=False,
                    msg=("rdmaform: the connection was lost during the activation (%s) and the host was not reachable again "
                         "within %ds (%s); the activation goes on, detached, on the host: its outcome is in "
                         "/run/rdmaform/ansible-activate.json, and the next task with state activated returns it") % (lost, reconnect, last))

    def _run(self, tmp, task_vars):
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
        cache, explicit, bad = self._cache_dir(task_vars)
        if bad:
            result.update(failed=True, msg=bad)
            return result
        data = None
        if cache:
            data = self._run_cached(module, cache, explicit, task_vars)
        if data is None:
            data = self._execute_module(module_name=module, module_args=self._task.args, task_vars=task_vars)
        result.update(data)
        if probed and not delegated:
            result.setdefault("ansible_facts", {})[FACT] = machine
        return result

    def _cache_dir(self, task_vars):
        """The cache directory for this task or None, whether the user set
        it (a user who set it is told why it is not used), and what is
        wrong with it, if anything."""
        explicit = CACHE_VAR in task_vars or CACHE_ENV in os.environ
        path = self._templar.template(task_vars.get(CACHE_VAR, os.environ.get(CACHE_ENV, CACHE_DEFAULT)))
        if not path:
            return None, explicit, None
        if not isinstance(path, str) or not path.startswith("/") or not path.strip("/") or "\0" in path or "\n" in path:
            return None, explicit, ("rdmaform: %s (or %s on the controller) must be an absolute directory path other than /, "
                                    "or \"\" for no module cache: got %r" % (CACHE_VAR, CACHE_ENV, path))
        if (self._task.async_val or C.DEFAULT_KEEP_REMOTE_FILES or not self._connection.has_pipelining
                or getattr(self._connection._shell, "_IS_WINDOWS", False)
                or getattr(self._connection, "_remote_is_local", False)):
            return None, explicit, None
        return path.rstrip("/"), explicit, None

    def _run_cached(self, module, cache, explicit, task_vars):
        """Run the module from the cache, installing it there first when it
        is missing. None when the cache cannot be used: the caller runs the
        module as Ansible does."""
        found = self._shared_loader_obj.module_loader.find_plugin_with_context(module, "", collection_list=self._task.collections)
        if not found.resolved:
            return None
        local = found.plugin_resolved_path
        digest = sha256_of(local)
        cached = "%s/rdmaform-%s" % (cache, digest)

        args = dict(self._task.args)
        self._update_module_args(module, args, task_vars)
        # The arguments go on standard input where Ansible would pipe a
        # module's (its pipelining rule: no tty needed for become), else
        # into a file of the task's temporary directory.
        piped = not self._connection.become or self._is_pipelining_enabled("new")
        args_file = None
        if not piped:
            tmpdir = self._connection._shell.tmpdir or self._make_tmp_path()
            args_file = self._connection._shell.join_path(tmpdir, "args")
            self._transfer_data(args_file, json.dumps(args))
            self._fixup_perms2([tmpdir, args_file], self._get_remote_user(), execute=False)

        # The task's environment is exported, then the shell itself execs
        # the module: env(1) would run a binary the kernel refuses (another
        # architecture) as a shell script, where sh says "Exec format error".
        env = self._compute_environment_string()
        export = "export %s; " % env if env.strip() else ""
        run = (SAFE + 'd=%s; f=%s; if [ -f "$f" ] && safe "$d" && safe "$f"; then %sexec "$f" %s; fi; '
               'mkdir -p "$d" 2>/dev/null || { echo %s cannot create the directory; exit 0; }; '
               'safe "$d" || { unsafe_dir; exit 0; }; '
               'echo %s'
               % (shlex.quote(cache), shlex.quote(cached), export, shlex.quote(args_file) if args_file else STDIN_ARG,
                  shlex.quote(REFUSED), shlex.quote(MISS)))
        in_data = None if args_file else json.dumps(args).encode("ascii")
        res = self._low_level_execute_command(run, sudoable=True, in_data=in_data)
        why = self._refused(res)
        if why is None and res.get("stdout", "").strip() == MISS:
            why = self._install(local, cache, cached, digest)
            if why is None:
                res = self._low_level_execute_command(run, sudoable=True, in_data=in_data)
                why = self._refused(res)
                if why is None and res.get("stdout", "").strip() == MISS:
                    why = "the binary is not there after installing it"
        if why is not None:
            if explicit:
                display.warning("rdmaform: the module cache %s is not used on this host: %s; the module is copied for each task" % (cache, why))
            else:
                display.vvv("rdmaform: the module cache %s is not used: %s" % (cache, why))
            return None

        data = self._parse_returned_data(res)
        remove_internal_keys(data)
        for k in ("stdout", "stderr"):
            if k in data and k + "_lines" not in data:
                data[k + "_lines"] = (data.get(k) or "").splitlines()
        return wrap_var(data)

    @staticmethod
    def _refused(res):
        """Why the cache was refused, from a cached run's output, or None."""
        out = res.get("stdout", "").strip()
        if out.startswith(REFUSED):
            return out[len(REFUSED):].strip()
        return None

    def _install(self, local, cache, cached, digest):
        """Copy the module into the cache: to the task's temporary
        directory, then, as the module's user, into the cache directory
        under a temporary name, checked against its SHA-256, and renamed to
        its name. The other builds there are removed. Returns why it could
        not, or None."""
        tmpdir = self._connection._shell.tmpdir or self._make_tmp_path()
        staged = self._connection._shell.join_path(tmpdir, "rdmaform-module")
        self._transfer_file(local, staged)
        self._fixup_perms2([tmpdir, staged], self._get_remote_user())
        install = (SAFE + 'set -e; umask 022; d=%s; f=%s; t="$d/.rdmaform-%s.$$"; '
                   'safe "$d" || { unsafe_dir; exit 0; }; '
                   'command -v sha256sum >/dev/null || { echo %s sha256sum is not installed; exit 0; }; '
                   'cp %s "$t"; chmod 0755 "$t"; '
                   'echo "%s  $t" | sha256sum -c >/dev/null 2>&1 || { rm -f "$t"; echo %s the copy does not match its SHA-256; exit 0; }; '
                   'mv -f "$t" "$f"; '
                   'for o in "$d"/rdmaform-*; do [ "$o" = "$f" ] || rm -f "$o"; done; '
                   'find "$d" -name ".rdmaform-*" -mtime +0 -exec rm -f {} + 2>/dev/null || true'
                   % (shlex.quote(cache), shlex.quote(cached), digest, shlex.quote(REFUSED),
                      shlex.quote(staged), digest, shlex.quote(REFUSED)))
        res = self._low_level_execute_command(install, sudoable=True)
        # The staged copy goes with the task's temporary directory
        # (ActionBase.cleanup); remove it now all the same: 15 MB.
        self._low_level_execute_command("rm -f %s" % shlex.quote(staged), sudoable=False)
        why = self._refused(res)
        if why is None and res.get("rc") != 0:
            why = "installing it failed (rc %s): %s" % (res.get("rc"), (res.get("stderr") or res.get("stdout", "")).strip())
        return why
