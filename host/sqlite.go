package host

import (
	"database/sql"
	"fmt"
	"net/url"
	"os"

	// modernc.org/sqlite is SQLite translated to Go: no cgo, so rdmaform
	// stays one static binary.
	_ "modernc.org/sqlite"
)

// OpenSQLite opens a SQLite database file of this machine read-only and
// immutable: nothing is ever written, locked or journaled next to it (the
// file may belong to a package, e.g. mstflint's parameter database). It
// returns an error wrapping fs.ErrNotExist when the file is missing.
//
// Equivalent to: sqlite3 -readonly 'file:NAME?immutable=1'
func OpenSQLite(name string) (*sql.DB, error) {
	if _, err := os.Stat(name); err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: name, RawQuery: "mode=ro&immutable=1"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", name, err)
	}
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening %s: %w", name, err)
	}
	return db, nil
}
