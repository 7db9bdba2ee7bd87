["mstflint","-i","/tmp/nvidia_firmware65686/fw_20_35_1012.bin","q"]
