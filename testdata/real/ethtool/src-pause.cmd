["ethtool", "-a", "ens1f0np0"]
