package cli

import (
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/projector/read"
)

// The read API's address: the --server flag, or ARGOSY_SERVER, or this.
const (
	EnvServer     = "ARGOSY_SERVER"
	DefaultServer = "http://127.0.0.1:8080"
)

// APIOptions are the flags of every command that reads the read API.
type APIOptions struct {
	// Server is the read API's base URL.
	Server string
	// HTTPClient is the client to call it with; nil for a default one.
	HTTPClient *http.Client
}

// addAPIFlags binds --server, whose default is ARGOSY_SERVER when set.
func addAPIFlags(cmd *cobra.Command, o *APIOptions) {
	def := DefaultServer
	if v := os.Getenv(EnvServer); v != "" {
		def = v
	}
	cmd.Flags().StringVar(&o.Server, "server", def, "base URL of the read API (env "+EnvServer+")")
}

// client checks --server and returns a client of it; a bad URL is a
// FlagError.
func (o *APIOptions) client() (*read.Client, error) {
	c, err := read.NewClient(o.Server, o.HTTPClient)
	if err != nil {
		return nil, &FlagError{Err: fmt.Errorf("--server: %w", err)}
	}
	return c, nil
}

// usageArgs makes a wrong number of arguments a FlagError, which prints
// the usage.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			return &FlagError{Err: err}
		}
		return nil
	}
}

// parseTime parses an RFC 3339 flag value; empty is the zero time.
func parseTime(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, &FlagError{Err: fmt.Errorf("--%s %q: want an RFC 3339 time such as 2026-03-02T15:04:05Z", flag, v)}
	}
	return t, nil
}

// stamp formats a time for a table: RFC 3339 in UTC, "-" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// pairs formats a map as k=v,k=v in key order, "-" when empty.
func pairs[V any](m map[string]V) string {
	if len(m) == 0 {
		return "-"
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s=%v", k, m[k]))
	}
	return strings.Join(out, ",")
}

// printFields writes name/value pairs one per line, aligned: the table
// form of a single object.
func printFields(w io.Writer, fields [][2]string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, f := range fields {
		fmt.Fprintf(tw, "%s:\t%s\n", f[0], f[1])
	}
	return tw.Flush()
}

// printCSV writes header and rows as CSV.
func printCSV(w io.Writer, header []string, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	return cw.Error()
}
