package cmdkit

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// outputFormats are the formats of -o/--output unless a command offers
// others.
var outputFormats = []string{"table", "json", "yaml"}

// formatsOr is formats, or the usual ones when there are none.
func formatsOr(formats []string) []string {
	if len(formats) == 0 {
		return outputFormats
	}
	return formats
}

// AddOutputFlag binds -o/--output to p, with shell completion. It offers
// formats, the first the default; without formats, table (the default),
// json and yaml.
func AddOutputFlag(cmd *cobra.Command, p *string, formats ...string) {
	formats = formatsOr(formats)
	cmd.Flags().StringVarP(p, "output", "o", formats[0], "output format: "+strings.Join(formats, "|"))
	err := cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	if err != nil { // cannot happen for a flag just added; surface it if it does
		cmd.PreRunE = func(*cobra.Command, []string) error { return fmt.Errorf("output flag completion: %w", err) }
	}
}

// CheckOutput checks -o against the formats a command offers, as given to
// AddOutputFlag; an unknown one is a FlagError.
func CheckOutput(format string, formats ...string) error {
	formats = formatsOr(formats)
	if !slices.Contains(formats, format) {
		return &FlagError{Err: fmt.Errorf("unknown output format %q: want one of %s", format, strings.Join(formats, ", "))}
	}
	return nil
}

// PrintOut writes v as JSON or YAML, or, for any other format, as a table
// of header and rows.
func PrintOut(w io.Writer, format string, v any, header []string, rows [][]string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// PrintFields writes name/value pairs one per line, aligned: the table
// form of a single object.
func PrintFields(w io.Writer, fields [][2]string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, f := range fields {
		fmt.Fprintf(tw, "%s:\t%s\n", f[0], f[1])
	}
	return tw.Flush()
}

// PrintCSV writes header and rows as CSV.
func PrintCSV(w io.Writer, header []string, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	return cw.Error()
}

// Stamp formats a time for a table: RFC 3339 in UTC, "-" for none.
func Stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// OrDash returns s, or "-" when it is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// YesNo formats a bool for a table.
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Pairs formats a map as k=v,k=v in key order, "-" when empty.
func Pairs[V any](m map[string]V) string {
	if len(m) == 0 {
		return "-"
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s=%v", k, m[k]))
	}
	return strings.Join(out, ",")
}
