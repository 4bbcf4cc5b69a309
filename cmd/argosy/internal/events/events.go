// Package events is `argosy events`, the commands about Argosy's event
// catalogue: `events types`.
package events

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	argosyevents "github.com/argosyproj/argosy/events"
)

// NewCmdEvents returns `argosy events`, the event catalogue's commands.
func NewCmdEvents(io cmdkit.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Inspect Argosy's event catalogue",
	}
	cmd.AddCommand(NewCmdEventsTypes(io, nil))
	return cmd
}

// EventsTypesOptions are the flags of `argosy events types`.
type EventsTypesOptions struct {
	IO     cmdkit.IOStreams
	Output string
	Family string
}

// eventTypeView is one row of `argosy events types`.
type eventTypeView struct {
	Type   string `json:"type"`
	Family string `json:"family"`
	Topic  string `json:"topic"`
	Signer string `json:"signer"`
	Schema string `json:"schema"`
	Doc    string `json:"description"`
}

// NewCmdEventsTypes returns `argosy events types`.
func NewCmdEventsTypes(io cmdkit.IOStreams, runF func(context.Context, *EventsTypesOptions) error) *cobra.Command {
	opts := &EventsTypesOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "types",
		Short: "List every event type, its topic and who signs it",
		Example: `  argosy events types
  argosy events types --family status
  argosy events types -o json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cmdkit.CheckOutput(opts.Output); err != nil {
				return err
			}
			if opts.Family != "" && !slices.Contains(families(), opts.Family) {
				return &cmdkit.FlagError{Err: fmt.Errorf("unknown family %q: want one of %s", opts.Family, strings.Join(families(), ", "))}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return eventsTypesRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Family, "family", "", "only this family: "+strings.Join(families(), "|"))
	if err := cmd.RegisterFlagCompletionFunc("family", cobra.FixedCompletions(families(), cobra.ShellCompDirectiveNoFileComp)); err != nil {
		cmd.PreRunE = func(*cobra.Command, []string) error { return fmt.Errorf("family flag completion: %w", err) }
	}
	return cmd
}

func families() []string {
	return []string{string(argosyevents.FamilyConfig), string(argosyevents.FamilyStatus), string(argosyevents.FamilyHub), string(argosyevents.FamilyTrust)}
}

func eventsTypesRun(_ context.Context, opts *EventsTypesOptions) error {
	var views []eventTypeView
	var rows [][]string
	for _, s := range argosyevents.Catalogue() {
		if opts.Family != "" && opts.Family != string(s.Family) {
			continue
		}
		v := eventTypeView{Type: s.Type, Family: string(s.Family), Topic: string(s.Topic), Signer: s.Signer,
			Schema: s.SchemaURL(), Doc: s.Doc}
		views = append(views, v)
		rows = append(rows, []string{v.Type, v.Family, v.Topic, v.Signer, v.Doc})
	}
	return cmdkit.PrintOut(opts.IO.Out, opts.Output, views, []string{"TYPE", "FAMILY", "TOPIC", "SIGNER", "DESCRIPTION"}, rows)
}
