["nmcli","-t","-f","RUNNING","general"]
