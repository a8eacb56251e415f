package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// How --help looks: usage lines wrapped to helpWidth, examples, the
// environment variables a command reads, and no "(default [])" after
// repeatable flags. Also: a command group (fleetscope, admin, key,
// tenant) given an unknown command fails as a usage error (exit 2).

// helpWidth is the width help text is wrapped to.
const helpWidth = 80

// annotation key of a command's environment variables (see environment).
const envAnnotation = "environment"

// clientEnvHelp describes the variables of the commands that ask a server,
// whose key needs scope.
func clientEnvHelp(scope string) string {
	return `  FLEETSCOPE_URL       the server (default http://127.0.0.1:8080)
  FLEETSCOPE_API_KEY   the API key` + scope + `: fleetscope key create,
                       fleetscope admin create-key, or .data/api-key (make run)`
}

const usageTemplate = `Usage:
{{useLines .}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{wrapText .Short (add .NamePadding 3)}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{flagUsages .LocalFlags}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{flagUsages .InheritedFlags}}{{end}}{{with environment .}}

Environment:
{{.}}{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} COMMAND --help" for more about a command.{{end}}
`

const helpTemplate = `{{if .Long}}{{.Long | trimTrailingWhitespaces}}{{else}}{{wrapText .Short 0}}{{end}}

{{if or .Runnable .HasSubCommands}}{{.UsageString}}{{end}}`

func init() {
	cobra.AddTemplateFunc("useLines", useLines)
	cobra.AddTemplateFunc("add", func(a, b int) int { return a + b })
	cobra.AddTemplateFunc("wrapText", wrapText)
	cobra.AddTemplateFunc("environment", func(c *cobra.Command) string { return c.Annotations[envAnnotation] })
	cobra.AddTemplateFunc("flagUsages", func(f *pflag.FlagSet) string {
		return strings.TrimRight(f.FlagUsagesWrapped(helpWidth), " \n")
	})
}

// setEnvironment lists the environment variables a command reads in its help.
func setEnvironment(c *cobra.Command, text string) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[envAnnotation] = text
}

// setupHelp applies the help conventions to root and every command under it.
func setupHelp(root *cobra.Command) {
	root.SetUsageTemplate(usageTemplate)
	root.SetHelpTemplate(helpTemplate)
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.DefValue == "[]" { // a repeatable flag given no value: nothing to say
				switch f.Value.Type() {
				case "stringArray", "stringSlice", "intSlice": // pflag says nothing already
				default:
					f.DefValue = ""
				}
			}
		})
		if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
			c.Args = cobra.ArbitraryArgs
			c.RunE = unknownCommand
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
}

// unknownCommand runs a command group: its help when given no command, a
// usage error when given one it does not have.
func unknownCommand(c *cobra.Command, a []string) error {
	if len(a) == 0 {
		return c.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", a[0], c.CommandPath())
	if s := c.SuggestionsFor(a[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return usageError{fmt.Errorf("%s; %s --help lists the commands", msg, c.CommandPath())}
}

// useLines is a command's usage line(s), wrapped: "  fleetscope admin
// COMMAND" for a group.
func useLines(c *cobra.Command) string {
	if c.HasAvailableSubCommands() {
		return "  " + c.CommandPath() + " COMMAND"
	}
	line := c.UseLine()
	if c.HasAvailableFlags() && !strings.Contains(c.Use, "[flags]") {
		line = strings.TrimSuffix(line, " [flags]")
	}
	return wrapUsage(line, helpWidth)
}

// wrapUsage wraps a usage line to width: "  " before the first line, six
// spaces before the others, broken between top-level groups ([...], (...)
// and words) and inside a group only when it does not fit on a line.
func wrapUsage(line string, width int) string {
	const first, next = "  ", "      "
	var groups []string
	depth, start := 0, 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case ' ':
			if depth == 0 {
				if i > start {
					groups = append(groups, line[start:i])
				}
				start = i + 1
			}
		}
	}
	if start < len(line) {
		groups = append(groups, line[start:])
	}
	var b strings.Builder
	cur := first
	flush := func() {
		b.WriteString(strings.TrimRight(cur, " "))
		b.WriteByte('\n')
		cur = next
	}
	add := func(word string) {
		if strings.TrimSpace(cur) != "" && len(cur)+1+len(word) > width {
			flush()
		}
		if strings.TrimSpace(cur) != "" {
			cur += " "
		}
		cur += word
	}
	for _, g := range groups {
		if len(next)+len(g) <= width {
			add(g)
			continue
		}
		for _, w := range strings.Fields(g) { // too long for any line: break it inside
			add(w)
		}
	}
	b.WriteString(cur)
	return b.String()
}

// wrapText wraps text to helpWidth for a column starting at indent: the
// lines after the first begin with indent spaces.
func wrapText(text string, indent int) string {
	var b strings.Builder
	col := indent
	for i, w := range strings.Fields(text) {
		if i > 0 && col+1+len(w) > helpWidth {
			b.WriteString("\n" + strings.Repeat(" ", indent))
			col = indent
		} else if i > 0 {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += len(w)
	}
	return b.String()
}
