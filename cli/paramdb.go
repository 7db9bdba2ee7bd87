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

// paramDBCheck adds --no-param-db and --param-db to validate and returns
// the check: firmware parameter names and values against mstflint's
// parameter database. The database is a tool's data file on the machine
// rdmaform runs on (like the tools on PATH), not host state, so it is
// read from there even with --root or --sim; a missing database skips
// the check unless --param-db names it.
func (a *app) paramDBCheck(cmd *cobra.Command) func(*schema.Spec) error {
	var skip bool
	var path string
	cmd.Flags().BoolVar(&skip, "no-param-db", false, "do not check firmware parameters against mstflint's parameter database")
	cmd.Flags().StringVar(&path, "param-db", "", "mstflint parameter database `FILE` (default "+firmware.ParamDBPath+" when installed)")
	return func(spec *schema.Spec) error {
		if skip || !hasFirmware(spec) {
			return nil
		}
		file := path
		if file == "" {
			file = firmware.ParamDBPath
		}
		db, err := firmware.LoadParamDB(file)
		if errors.Is(err, fs.ErrNotExist) && path == "" {
			return nil
		}
		if err != nil {
			return &exitError{code: plan.ExitError, err: fmt.Errorf("parameter database: %w", err)}
		}
		rep := db.Check(spec)
		if len(rep) == 0 {
			return nil
		}
		rep.Sort()
		for _, f := range rep {
			fmt.Fprintln(a.env.Stderr, f.String())
		}
		return &exitError{code: plan.ExitError, err: fmt.Errorf("%s: %d %s", spec.Src.File, len(rep), plural(len(rep), "error", "errors"))}
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
