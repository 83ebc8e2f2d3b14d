package rulefile

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"text/template"
	"text/template/parse"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Templates in rule files are Go text/templates with delimiters << and >> and no
// functions beyond text/template's built-ins, as in prometheus-adapter.
const (
	leftDelim  = "<<"
	rightDelim = ">>"
)

// Sentinels stand for the group and the resource when a label template is tried; the
// NUL bytes keep them from clashing with the template's own text.
const (
	groupSentinel    = "\x00group\x00"
	resourceSentinel = "\x00resource\x00"
)

// queryTemplateArgs are the fields a metricsQuery, containerQuery or nodeQuery may use;
// trial runs fill them with sample values of a request for two pods.
type queryTemplateArgs struct {
	Series            string
	LabelMatchers     string
	LabelValuesByName map[string]string
	GroupBy           string
	GroupBySlice      []string
}

func sampleQueryArgs() queryTemplateArgs {
	return queryTemplateArgs{
		Series:            "http_requests_total",
		LabelMatchers:     `namespace="default",pod=~"a|b"`,
		LabelValuesByName: map[string]string{"namespace": "default", "pod": "a|b"},
		GroupBy:           "pod",
		GroupBySlice:      []string{"pod"},
	}
}

// parseTemplate parses text as prometheus-adapter does. The error drops text/template's
// "template: " prefix.
func parseTemplate(name, text string) (*template.Template, error) {
	t, err := template.New(name).Delims(leftDelim, rightDelim).Parse(text)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "template: "))
	}
	return t, nil
}

// maxTrialOutput bounds what a trial run may write.
const maxTrialOutput = 64 << 10

var errTrialOutputTooLong = errors.New("output longer than 64 KiB")

type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxTrialOutput {
		return 0, errTrialOutputTooLong
	}
	return b.Buffer.Write(p)
}

// tryExecute runs t on data with bounded output. ran is false, and out and err are
// empty, when t loops over anything but a field of its data (`range 1000000000`),
// which a trial run cannot bound.
func tryExecute(t *template.Template, data any) (out string, ran bool, err error) {
	for _, tmpl := range t.Templates() {
		if tmpl.Tree != nil && !boundedLoops(tmpl.Tree.Root) {
			return "", false, nil
		}
	}
	var buf limitedBuffer
	if err := t.Execute(&buf, data); err != nil {
		return "", true, errors.New(strings.TrimPrefix(err.Error(), "template: "))
	}
	return buf.String(), true, nil
}

// boundedLoops reports whether every range under n ranges over a plain field (whose
// length the trial data bounds).
func boundedLoops(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return true
		}
		for _, child := range n.Nodes {
			if !boundedLoops(child) {
				return false
			}
		}
	case *parse.IfNode:
		return boundedLoops(n.List) && boundedLoops(n.ElseList)
	case *parse.WithNode:
		return boundedLoops(n.List) && boundedLoops(n.ElseList)
	case *parse.RangeNode:
		return rangesOverField(n.Pipe) && boundedLoops(n.List) && boundedLoops(n.ElseList)
	}
	return true
}

func rangesOverField(pipe *parse.PipeNode) bool {
	if pipe == nil || len(pipe.Cmds) != 1 || len(pipe.Cmds[0].Args) != 1 {
		return false
	}
	_, ok := pipe.Cmds[0].Args[0].(*parse.FieldNode)
	return ok
}

// checkLabelTemplate checks a resources.template as prometheus-adapter does at start:
// it parses, runs on a group-resource, uses .Resource, and what it gives, with the
// group and resource as wildcards, is a regular expression for label names.
func checkLabelTemplate(p *problems, field, text string) {
	t, err := parseTemplate(field, text)
	if err != nil {
		p.add(field, "invalid template: %v", err)
		return
	}
	const mustUse = `must use <<.Resource>>, e.g. "<<.Resource>>" or "kube_<<.Group>>_<<.Resource>>"`
	out, ran, err := tryExecute(t, schema.GroupResource{Group: groupSentinel, Resource: resourceSentinel})
	switch {
	case !ran:
		if !strings.Contains(text, ".Resource") {
			p.add(field, mustUse)
		}
	case err != nil:
		p.add(field, "template fails: %v", err)
	case !strings.Contains(out, resourceSentinel):
		p.add(field, mustUse)
	default:
		wildcards := strings.NewReplacer(groupSentinel, "(.+?)", resourceSentinel, "(.+?)")
		if _, err := regexp.Compile("^" + wildcards.Replace(out) + "$"); err != nil {
			p.add(field, "the label pattern this template gives is not a valid regular expression: %v", err)
		}
	}
}

// checkQueryTemplate checks that a metricsQuery, containerQuery or nodeQuery parses,
// as prometheus-adapter does at start. An empty one parses; what it and every other
// template render is Warnings' to try.
func checkQueryTemplate(p *problems, field, text string) {
	if _, err := parseTemplate(field, text); err != nil {
		p.add(field, "invalid template: %v", err)
	}
}

// externalQueryArgs are sample arguments of an external request: no resource, so no
// grouping.
func externalQueryArgs() queryTemplateArgs {
	return queryTemplateArgs{
		Series:            "queue_messages_ready",
		LabelMatchers:     `queue="orders",namespace="default"`,
		LabelValuesByName: map[string]string{"queue": "orders", "namespace": "default"},
	}
}
