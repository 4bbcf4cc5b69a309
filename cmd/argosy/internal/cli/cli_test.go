package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/events"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewRoot(cmdkit.IOStreams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
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
	if len(views) != len(events.Catalogue()) {
		t.Errorf("%d types listed, catalogue has %d", len(views), len(events.Catalogue()))
	}
	out, err = run(t, "events", "types", "--family", "trust")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, events.TypeKeyRevoked) || strings.Contains(out, events.TypeHeartbeat) {
		t.Errorf("--family trust listed:\n%s", out)
	}
	if _, err := run(t, "events", "types", "-o", "xml"); !errors.As(err, new(*cmdkit.FlagError)) {
		t.Errorf("bad -o: %v, want a cmdkit.FlagError", err)
	}
}

func TestVersionAndCompletion(t *testing.T) {
	out, err := run(t, "version", "-o", "yaml")
	if err != nil || !strings.Contains(out, "version: dev") {
		t.Errorf("version: %v\n%s", err, out)
	}
	out, err = run(t, "completion", "bash")
	if err != nil || !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash: %v\n%.200s", err, out)
	}
}
