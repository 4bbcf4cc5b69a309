package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/projector/sqlstore"
)

// ErrStoresDiffer is returned by `argosy replay diff` when the stores do
// not match: the command exits 1.
var ErrStoresDiffer = errors.New("the stores differ")

// DiffOptions are the flags of `argosy replay diff`.
type DiffOptions struct {
	IO     cmdkit.IOStreams
	A, B   string
	Max    int
	Output string
}

// NewCmdDiff returns `argosy replay diff`.
func NewCmdDiff(io cmdkit.IOStreams, runF func(context.Context, *DiffOptions) error) *cobra.Command {
	opts := &DiffOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "diff STORE_A STORE_B",
		Short: "Compare two stores row by row",
		Long: `diff compares every view of two stores (sqlite://PATH or postgres://…, of
either engine), and their offsets, row by row in key order. It prints each
row only one store holds and each column that differs, up to
--max-differences, then what it compared in each table. It exits 0 when
the stores match and 1 when they differ. It opens both only to read: it
creates, migrates and changes nothing.`,
		Example: `  argosy replay diff sqlite:///var/lib/argosy/views.db sqlite:///var/lib/argosy/rebuilt.db
  argosy replay diff postgres://argosy@db/argosy sqlite://rebuilt.db -o json`,
		Args: cmdkit.UsageArgs(cobra.ExactArgs(2)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := cmdkit.CheckOutput(opts.Output); err != nil {
				return err
			}
			opts.A, opts.B = args[0], args[1]
			if opts.Max < 0 {
				return &cmdkit.FlagError{Err: errors.New("--max-differences must not be negative")}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return diffRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	cmd.Flags().IntVar(&opts.Max, "max-differences", 50, "differing rows to print at most (all are counted)")
	return cmd
}

// diffResult is what diff prints as JSON or YAML.
type diffResult struct {
	Match       bool                       `json:"match"`
	Tables      []sqlstore.TableComparison `json:"tables"`
	Differences []sqlstore.Difference      `json:"differences"`
}

func diffRun(ctx context.Context, o *DiffOptions) error {
	a, err := sqlstore.OpenExisting(ctx, o.A)
	if err != nil {
		return fmt.Errorf("STORE_A: %w", err)
	}
	defer a.Close()
	b, err := sqlstore.OpenExisting(ctx, o.B)
	if err != nil {
		return fmt.Errorf("STORE_B: %w", err)
	}
	defer b.Close()
	res := diffResult{Differences: []sqlstore.Difference{}}
	res.Tables, err = sqlstore.Diff(ctx, a, b, func(d sqlstore.Difference) error {
		if len(res.Differences) < o.Max {
			res.Differences = append(res.Differences, d)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var differ, tables int64
	for _, t := range res.Tables {
		differ += t.Differences
		if t.Differences > 0 {
			tables++
		}
	}
	res.Match = differ == 0
	if o.Output != "table" {
		err = cmdkit.PrintOut(o.IO.Out, o.Output, res, nil, nil)
	} else {
		err = printDiff(o, res)
	}
	if err != nil {
		return err
	}
	if !res.Match {
		return fmt.Errorf("%w: %d rows in %d tables", ErrStoresDiffer, differ, tables)
	}
	return nil
}

func printDiff(o *DiffOptions, res diffResult) error {
	w := o.IO.Out
	for _, d := range res.Differences {
		key := d.Table + " (" + strings.Join(d.Key, ", ") + ")"
		if d.Only != "" {
			if _, err := fmt.Fprintf(w, "%s: only in %s\n", key, strings.ToUpper(d.Only)); err != nil {
				return err
			}
			continue
		}
		for _, c := range d.Columns {
			if _, err := fmt.Fprintf(w, "%s: %s\n  A: %s\n  B: %s\n", key, c.Column, c.A, c.B); err != nil {
				return err
			}
		}
	}
	if len(res.Differences) > 0 {
		if _, err := fmt.Fprintln(w); err != nil {
			return err
		}
	}
	rows := make([][]string, 0, len(res.Tables))
	for _, t := range res.Tables {
		rows = append(rows, []string{t.Table, strconv.FormatInt(t.RowsA, 10), strconv.FormatInt(t.RowsB, 10), strconv.FormatInt(t.Differences, 10)})
	}
	return cmdkit.PrintOut(w, "table", nil, []string{"TABLE", "ROWS A", "ROWS B", "DIFFERING"}, rows)
}
