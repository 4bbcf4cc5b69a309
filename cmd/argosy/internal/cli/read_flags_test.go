package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/projector/read"
)

// parse runs cmd's flag parsing and checks, and returns what reached runF.
func parse[O any](t *testing.T, newCmd func(cmdkit.IOStreams, func(context.Context, *O) error) *cobra.Command, args []string) (*O, error) {
	t.Helper()
	var got *O
	cmd := newCmd(cmdkit.IOStreams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, func(_ context.Context, o *O) error {
		got = o
		return nil
	})
	cmd.SetArgs(append([]string{}, args...))
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	return got, cmd.Execute()
}

var ignoreIO = cmpopts.IgnoreFields(APIOptions{}, "HTTPClient")

func TestAuditFlags(t *testing.T) {
	t.Setenv(EnvServer, "")
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		args    []string
		want    AuditOptions
		wantErr string
	}{
		{args: nil, want: AuditOptions{Output: "table"}},
		{args: []string{"--cluster", "prod-eu", "-n", "argocd", "--app", "guestbook", "--actor", "alice", "--since", "24h",
			"--limit", "10", "-o", "yaml"},
			want: AuditOptions{Output: "yaml", Cluster: "prod-eu", Namespace: "argocd", App: "guestbook", Actor: "alice",
				Since: 24 * time.Hour, Limit: 10}},
		{args: []string{"--from", "2026-03-01T00:00:00Z", "--to", "2026-03-01T01:00:00.5+01:00"},
			want: AuditOptions{Output: "table", From: from, To: time.Date(2026, 3, 1, 0, 0, 0, 5e8, time.UTC)}},
		{args: []string{"--since", "1h", "--from", "2026-03-01T00:00:00Z"}, wantErr: "not both"},
		{args: []string{"--to", "03/01/2026"}, wantErr: `--to "03/01/2026"`},
		{args: []string{"--limit", "-1"}, wantErr: "--limit -1"},
		{args: []string{"--since", "yesterday"}, wantErr: "invalid argument"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := parse(t, NewCmdAudit, tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want.API.Server = DefaultServer
			if diff := cmp.Diff(tc.want, *got, ignoreIO, cmpopts.IgnoreFields(AuditOptions{}, "IO", "Now"),
				cmpopts.EquateApproxTime(0)); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReportDeploymentsFlags(t *testing.T) {
	t.Setenv(EnvServer, "")
	tests := []struct {
		args    []string
		want    read.ReportParams
		output  string
		wantErr string
	}{
		{args: []string{"--by", "app"}, want: read.ReportParams{By: "app", Bucket: "day"}, output: "table"},
		{args: []string{"--by", "label", "--label", "team", "--bucket", "week", "--from", "2026-01-01T00:00:00Z", "-o", "csv"},
			want:   read.ReportParams{By: "label", Label: "team", Bucket: "week", From: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
			output: "csv"},
		{args: []string{"--by", "project", "--to", "2026-01-01T00:00:00Z", "--from", "2026-01-02T00:00:00Z"},
			wantErr: "--from must be before --to"},
		{args: []string{"--by", "app", "extra"}, wantErr: `unknown command "extra"`},
		{args: nil, wantErr: "--by is required"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := parse(t, NewCmdReportDeployments, tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.ReportParams); diff != "" || got.Output != tc.output {
				t.Errorf("output %q, params (-want +got):\n%s", got.Output, diff)
			}
		})
	}
}

func TestAppStatusAndClusterGetFlags(t *testing.T) {
	t.Setenv(EnvServer, "")
	app, err := parse(t, NewCmdAppStatus, []string{"guestbook", "--cluster", "prod-eu", "--namespace", "argocd", "-o", "json"})
	if err != nil {
		t.Fatal(err)
	}
	want := AppStatusOptions{API: APIOptions{Server: DefaultServer}, Output: "json", Cluster: "prod-eu", Namespace: "argocd",
		Name: "guestbook"}
	if diff := cmp.Diff(want, *app, ignoreIO, cmpopts.IgnoreFields(AppStatusOptions{}, "IO")); diff != "" {
		t.Errorf("app status (-want +got):\n%s", diff)
	}
	cl, err := parse(t, NewCmdClusterGet, []string{"prod-eu", "--server", "https://argosy.example.com"})
	if err != nil || cl.Name != "prod-eu" || cl.API.Server != "https://argosy.example.com" || cl.Output != "table" {
		t.Errorf("cluster get: %+v, %v", cl, err)
	}
	v, err := parse(t, NewCmdAuditVerify, []string{"-o", "yaml"})
	if err != nil || v.Output != "yaml" {
		t.Errorf("audit verify: %+v, %v", v, err)
	}
}
