package cli

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/rdmaform/rdmaform/plan"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/schema"
)

// paramDBPath is where validate looks for mstflint's parameter database
// without --param-db (tests point it at a file that is not there).
var paramDBPath = firmware.ParamDBPath

// paramDBCheck adds --no-param-db and --param-db to validate and returns
// the check: firmware parameter names and values against mstflint's
// parameter database. The database is a tool's data file on the machine
// rdmaform runs on (like the tools on PATH), not host state, so it is
// read from there even with --root or --sim; a missing database skips
// the check unless --param-db names it, and the check returns a note
// that says so (validate prints it, in text and JSON).
func (a *app) paramDBCheck(cmd *cobra.Command) func(*schema.Spec) (string, error) {
	var skip bool
	var path string
	cmd.Flags().BoolVar(&skip, "no-param-db", false, "do not check firmware parameters against mstflint's parameter database")
	cmd.Flags().StringVar(&path, "param-db", "", "mstflint parameter database `FILE` (default "+firmware.ParamDBPath+" when installed)")
	return func(spec *schema.Spec) (string, error) {
		if skip || !hasFirmware(spec) {
			return "", nil
		}
		file := path
		if file == "" {
			file = paramDBPath
		}
		db, err := firmware.LoadParamDB(file)
		if errors.Is(err, fs.ErrNotExist) && path == "" {
			return fmt.Sprintf("firmware parameters were not checked: mstflint's parameter database %s is not installed (apt-get install mstflint, or --param-db FILE; --no-param-db skips the check)", file), nil
		}
		if err != nil {
			return "", &exitError{code: plan.ExitError, err: fmt.Errorf("parameter database: %w", err)}
		}
		rep := db.Check(spec)
		if len(rep) == 0 {
			return "", nil
		}
		rep.Sort()
		return "", &exitError{code: plan.ExitError, err: &findingsError{Name: spec.Src.File, Report: rep}}
	}
}

func hasFirmware(spec *schema.Spec) bool {
	for _, d := range spec.Devices {
		if d.Firmware != nil && len(d.Firmware.Params) > 0 {
			return true
		}
	}
	return false
}
