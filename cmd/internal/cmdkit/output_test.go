package cmdkit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// TestOutputFlag checks -o's default and its check, with the usual formats
// and with a command's own.
func TestOutputFlag(t *testing.T) {
	tests := []struct {
		formats []string
		args    []string
		want    string
		wantErr string
	}{
		{args: nil, want: "table"},
		{args: []string{"-o", "yaml"}, want: "yaml"},
		{args: []string{"--output", "csv"}, wantErr: `unknown output format "csv": want one of table, json, yaml`},
		{formats: []string{"table", "json", "yaml", "csv"}, args: []string{"-o", "csv"}, want: "csv"},
		{formats: []string{"json", "table"}, args: nil, want: "json"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.formats, ",")+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			var got string
			cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error {
				return cmdkit.CheckOutput(got, tc.formats...)
			}}
			cmdkit.AddOutputFlag(cmd, &got, tc.formats...)
			cmd.SetArgs(append([]string{}, tc.args...))
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !errors.As(err, new(*cmdkit.FlagError)) {
					t.Fatalf("error %v, want the FlagError %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("-o %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestTableCells(t *testing.T) {
	at := time.Date(2026, 3, 2, 11, 4, 5, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct{ got, want string }{
		{cmdkit.Stamp(at), "2026-03-02T10:04:05Z"},
		{cmdkit.Stamp(time.Time{}), "-"},
		{cmdkit.OrDash(""), "-"},
		{cmdkit.OrDash("x"), "x"},
		{cmdkit.YesNo(true), "yes"},
		{cmdkit.Pairs(map[string]int{"b": 2, "a": 1}), "a=1,b=2"},
		{cmdkit.Pairs(map[string]string{}), "-"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestVersionFormats checks that each binary's version command prints in
// its own default format, and in any other that -o names.
func TestVersionFormats(t *testing.T) {
	tests := []struct {
		format string
		args   []string
		check  func(string) bool
	}{
		{"table", nil, func(out string) bool { return strings.HasPrefix(out, "VERSION") }},
		{"table", []string{"-o", "json"}, isJSON},
		{"json", nil, isJSON},
		{"json", []string{"-o", "yaml"}, func(out string) bool { return strings.HasPrefix(out, "goVersion: ") }},
	}
	for _, tc := range tests {
		t.Run(tc.format+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			cmd := cmdkit.NewCmdVersion(cmdkit.IOStreams{Out: &out, Err: &bytes.Buffer{}}, "tool", tc.format, nil)
			cmd.SetArgs(append([]string{}, tc.args...))
			if err := cmd.ExecuteContext(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !tc.check(out.String()) {
				t.Errorf("output:\n%s", out.String())
			}
		})
	}
}

func isJSON(out string) bool {
	var v struct{ Version string }
	return json.Unmarshal([]byte(out), &v) == nil && v.Version == "dev"
}
