package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Output formats of -o/--output.
var outputFormats = []string{"table", "json", "yaml"}

// addOutputFlag binds -o/--output with completion.
func addOutputFlag(cmd *cobra.Command, p *string) { addOutputFlagOf(cmd, p, outputFormats) }

// addOutputFlagOf binds -o/--output offering formats, the first the default.
func addOutputFlagOf(cmd *cobra.Command, p *string, formats []string) {
	cmd.Flags().StringVarP(p, "output", "o", formats[0], "output format: "+strings.Join(formats, "|"))
	err := cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	if err != nil { // cannot happen for a flag just added; surface it if it does
		cmd.PreRunE = func(*cobra.Command, []string) error { return fmt.Errorf("output flag completion: %w", err) }
	}
}

func checkOutput(format string) error { return checkFormat(format, outputFormats) }

// checkFormat checks -o against the formats a command offers.
func checkFormat(format string, formats []string) error {
	if !slices.Contains(formats, format) {
		return &FlagError{Err: fmt.Errorf("unknown output format %q: want one of %s", format, strings.Join(formats, ", "))}
	}
	return nil
}

// printOut writes v as JSON or YAML, or as a table of header and rows.
func printOut(w io.Writer, format string, v any, header []string, rows [][]string) error {
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
