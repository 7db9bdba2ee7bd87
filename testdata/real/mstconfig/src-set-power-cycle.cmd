["mstconfig", "-d", "5e:00.0", "set", "SRIOV_EN=1", "NUM_OF_VFS=8"]
