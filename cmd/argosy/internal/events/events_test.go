package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	argosyevents "github.com/argosyproj/argosy/events"
)

// run runs `argosy events` with args (from "events" on) and returns what
// it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := cmdtest.Run(t, NewCmdEvents, args...)
	return out, err
}

func TestEventsTypesFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    EventsTypesOptions
		wantErr bool
	}{
		{args: nil, want: EventsTypesOptions{Output: "table"}},
		{args: []string{"-o", "json"}, want: EventsTypesOptions{Output: "json"}},
		{args: []string{"--output=yaml", "--family", "status"}, want: EventsTypesOptions{Output: "yaml", Family: "status"}},
		{args: []string{"-o", "xml"}, wantErr: true},
		{args: []string{"extra"}, wantErr: true},
		{args: []string{"--family", "nope"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var got *EventsTypesOptions
			cmd := NewCmdEventsTypes(cmdkit.IOStreams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, func(_ context.Context, o *EventsTypesOptions) error {
				got = o
				return nil
			})
			cmd.SetArgs(append([]string{}, tc.args...)) // nil would be os.Args
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if tc.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Output != tc.want.Output || got.Family != tc.want.Family {
				t.Errorf("options %+v, want %+v", *got, tc.want)
			}
		})
	}
}

func TestEventsTypesOutput(t *testing.T) {
	out, err := run(t, "events", "types", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var views []eventTypeView
	if err := json.Unmarshal([]byte(out), &views); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(views) != len(argosyevents.Catalogue()) {
		t.Errorf("%d types listed, catalogue has %d", len(views), len(argosyevents.Catalogue()))
	}
	out, err = run(t, "events", "types", "--family", "trust")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, argosyevents.TypeKeyRevoked) || strings.Contains(out, argosyevents.TypeHeartbeat) {
		t.Errorf("--family trust listed:\n%s", out)
	}
	if _, err := run(t, "events", "types", "-o", "xml"); !errors.As(err, new(*cmdkit.FlagError)) {
		t.Errorf("bad -o: %v, want a cmdkit.FlagError", err)
	}
}
