package main

// Tests of how the command line talks to its user: help, exit statuses,
// messages.

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelp: the top level and upload show examples and the environment
// variables; no help shows pflag's "(default [])" or "(default )" for a
// repeatable flag, and every usage line fits in 80 columns.
func TestHelp(t *testing.T) {
	help := func(c *cobra.Command) string {
		var b bytes.Buffer
		c.SetOut(&b)
		c.SetErr(&b)
		if err := c.Help(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	root := newRoot()
	upload, _, err := root.Find([]string{"upload"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*cobra.Command{root, upload} {
		h := help(c)
		for _, want := range []string{"Examples:\n  ", "Environment:\n  FLEETSCOPE_URL ", "\n  FLEETSCOPE_API_KEY "} {
			if !strings.Contains(h, want) {
				t.Errorf("%s --help lacks %q:\n%s", c.CommandPath(), want, h)
			}
		}
	}
	if h := help(upload); !strings.Contains(h, "fleetscope upload --app checkout --host web-7 -\n") {
		t.Errorf("upload --help shows no upload from standard input:\n%s", h)
	}
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		h := help(c)
		if strings.Contains(h, "(default [])") || strings.Contains(h, "(default )") {
			t.Errorf("%s --help shows an empty default:\n%s", c.CommandPath(), h)
		}
		usage := h[strings.Index(h, "Usage:\n"):]
		for _, line := range strings.Split(usage, "\n")[1:] {
			if line == "" {
				break
			}
			if len(line) > helpWidth {
				t.Errorf("%s --help: usage line of %d characters: %q", c.CommandPath(), len(line), line)
			}
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
}

// TestUnknownCommandIsUsageError: an unknown command (at the top level or
// in a group) is a usage error: exit 2, one line naming it.
func TestUnknownCommandIsUsageError(t *testing.T) {
	for _, args := range [][]string{{"bogus"}, {"admin", "bogus"}, {"key", "creat"}} {
		out, errOut, code := run1(nil, args...)
		if code != exitUsage || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, `unknown command "`+args[len(args)-1]+`"`) {
			t.Errorf("fleetscope %v: exit %d, stdout %q, stderr %q; want exit 2 and one line naming the command", args, code, out, errOut)
		}
	}
	if out, errOut, code := run1(nil); code != 0 || !strings.Contains(out, "Commands:") {
		t.Errorf("fleetscope alone: exit %d, stderr %q; want the help", code, errOut)
	}
}

// runStdin runs a client command against s with stdin as standard input.
func (s *service) runStdin(stdin string, args ...string) (string, string, int) {
	cmd := exec.Command(fsBin, args...)
	cmd.Env = append(append(os.Environ(), s.env...), "FLEETSCOPE_URL="+s.url, "FLEETSCOPE_API_KEY="+s.key)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), ee.ExitCode()
	} else if err != nil {
		s.t.Fatal(err)
	}
	return out.String(), errOut.String(), 0
}

// TestUploadFromStdin: upload - reads the profile from standard input (a
// pipe): the same profile as the file it came from.
func TestUploadFromStdin(t *testing.T) {
	s := startService(t, serviceOpts{})
	path := plant(t, "--seed", "48", "--seconds", "2", "--epoch")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := s.runStdin(string(b), "upload", "--app", "test", "-")
	f := strings.Fields(out)
	if code != 0 || len(f) != 2 {
		t.Fatalf("upload -: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if again := s.upload(path); again != f[0] {
		t.Fatalf("the file uploaded after its bytes came on stdin: profile %s, want the same profile %s", again, f[0])
	}
	if _, errOut, code := s.runStdin("", "upload", "--app", "test", "-", "-"); code != exitUsage {
		t.Fatalf("upload - -: exit %d (%s), want a usage error", code, errOut)
	}
}
