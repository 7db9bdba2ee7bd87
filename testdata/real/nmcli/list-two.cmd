["nmcli","-t","-f","NAME,UUID,TYPE,DEVICE,ACTIVE,STATE","connection","show"]
