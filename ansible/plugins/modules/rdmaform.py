# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
#
# rdmaform.rdma.rdmaform is a static binary per architecture
# (rdmaform_x86_64, rdmaform_aarch64 beside this file); the action plugin
# of the same name (plugins/action/rdmaform.py) runs the one that matches
# each host. This file only gives the module its public name; its
# documentation is the sidecar rdmaform.yml, which ansible-doc reads.
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type
