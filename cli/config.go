package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

func newConfigCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Check and try rule files (prometheus-adapter format)"}
	cmd.AddCommand(newCheckCommand(), newRenderCommand())
	return cmd
}

func newCheckCommand() *cobra.Command {
	var backendsFile, kubeconfig, apiResources string
	var strict bool
	cmd := &cobra.Command{
		Use:   "check FILE",
		Short: "Report every problem in a rule file; exit non-zero if there is any",
		Long: `check loads FILE as ebbflow-adapter does: it refuses what prometheus-adapter v0.12.0
refuses (unknown keys, quoted booleans, templates that do not parse, unknown resources),
printing every problem at once with its field, then prints the warnings: what
prometheus-adapter starts with but mishandles. With --strict, warnings fail the check.

Resources are resolved against the built-in Kubernetes resources, and with
--api-resources FILE or --kubeconfig also against a cluster's, so rules that map a
label to a custom resource check offline. FILE is the output of
'kubectl api-resources' (with or without -o wide), or APIResourceList objects
(JSON or YAML) as 'kubectl get --raw /apis/GROUP/VERSION' prints them.

With --prometheus-backends-file (the adapter's flag of the same name) the file is
checked too, and every rule's backend must name one of its backends (or default).
Without it, backend names are only checked for their form and a note says so.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mapper, err := checkMapper(kubeconfig, apiResources)
			if err != nil {
				return err
			}
			opts := rules.Options{Mapper: mapper, AnyBackend: backendsFile == ""}
			if backendsFile != "" {
				f, err := rulefile.LoadBackendsFile(backendsFile)
				if err != nil {
					return err
				}
				opts.Backends = f.Names()
			}
			set, err := rules.ParseFileWith(args[0], opts)
			if err != nil {
				return fmt.Errorf("%s is invalid:\n%w", args[0], err)
			}
			printWarnings(cmd.OutOrStdout(), set.Warnings)
			if named := namedBackends(set.File); len(named) > 0 && backendsFile == "" {
				fmt.Fprintf(cmd.OutOrStdout(), "note: backends %s are not checked; pass --prometheus-backends-file\n", strings.Join(named, ", "))
			}
			custom, external := set.Counts()
			fmt.Fprintf(cmd.OutOrStdout(), "%s is valid: %d custom rules, %d external rules", args[0], custom, external)
			if set.File.ResourceRules != nil {
				fmt.Fprint(cmd.OutOrStdout(), ", resourceRules (metrics.k8s.io)")
			}
			fmt.Fprintln(cmd.OutOrStdout())
			if strict && len(set.Warnings) > 0 {
				return fmt.Errorf("%s has %d warnings (--strict)", args[0], len(set.Warnings))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&backendsFile, "prometheus-backends-file", "", "the adapter's backends file; rules' backend fields are checked against it")
	cmd.Flags().BoolVar(&strict, "strict", false, "fail when the file has warnings")
	cmd.Flags().StringVar(&apiResources, "api-resources", "", "the cluster's resources: the output of 'kubectl api-resources', or APIResourceList JSON/YAML")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "resolve resources through the discovery of the cluster this kubeconfig names")
	cmd.MarkFlagsMutuallyExclusive("api-resources", "kubeconfig")
	return cmd
}

// namedBackends lists the distinct backends other than the default that cfg's
// rules name, sorted.
func namedBackends(cfg *rulefile.File) []string {
	var out []string
	add := func(name string) {
		if name = rules.BackendName(name); name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	for _, r := range append(slices.Clone(cfg.Rules), cfg.ExternalRules...) {
		add(r.Backend)
	}
	if cfg.ResourceRules != nil {
		add(cfg.ResourceRules.Backend)
	}
	slices.Sort(out)
	return out
}

func newRenderCommand() *cobra.Command {
	var series []string
	cmd := &cobra.Command{
		Use:   "render FILE --series 'name{label=\"value\",...}'",
		Short: "Show the metrics a series yields and the PromQL of a sample request for each",
		Long: `render shows, for each series given, which rules discover it (their seriesQuery
matchers, evaluated on the series' labels, seriesFilters and name.matches all accept
it), the metric names and resources it yields, and the PromQL a
request for that metric would send, using the series' own label values as the
requested namespace and object names.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(series) == 0 {
				return errors.New("at least one --series is required")
			}
			set, err := rules.ParseFileWith(args[0], rules.Options{Mapper: rulefile.DefaultRESTMapper(), AnyBackend: true})
			if err != nil {
				return fmt.Errorf("%s is invalid:\n%w", args[0], err)
			}
			for _, s := range series {
				parsed, err := ParseSeries(s)
				if err != nil {
					return err
				}
				renderSeries(cmd.OutOrStdout(), set, parsed)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&series, "series", nil, `a series as name{label="value",...}; repeatable`)
	return cmd
}

func printWarnings(w io.Writer, warnings []rulefile.FieldError) {
	for _, warn := range warnings {
		fmt.Fprintf(w, "warning: %s\n", warn.Error())
	}
}

// renderSeries prints what each rule makes of one series.
func renderSeries(w io.Writer, set *rules.Set, s Series) {
	fmt.Fprintf(w, "series %s\n", s)
	matched := false
	for _, r := range set.Rules {
		list := "rules"
		if r.Kind() == rules.External {
			list = "externalRules"
		}
		if !SeriesQuerySelects(r.SeriesQuery(), s) {
			continue
		}
		metric, ok := r.MetricName(s.Name)
		if !ok {
			continue
		}
		matched = true
		fmt.Fprintf(w, "  %s[%d]: metric %q", list, r.Index(), metric)
		if r.Backend() != "" {
			fmt.Fprintf(w, " (backend %q)", r.Backend())
		}
		fmt.Fprintln(w)
		if r.Kind() == rules.External {
			ns := s.Labels["namespace"]
			q, err := r.ExternalQuery(s.Name, ns, nil)
			printQuery(w, "    external, namespace "+quoteOrNone(ns), q, err)
			continue
		}
		renderCustom(w, r, s)
	}
	if !matched {
		fmt.Fprintln(w, "  no rule discovers this series (its seriesQuery, seriesFilters and name.matches must all accept it)")
	}
}

func renderCustom(w io.Writer, r *rules.Rule, s Series) {
	names := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		names = append(names, k)
	}
	slices.Sort(names)
	resources, namespaced := r.Resources(names)
	if len(resources) == 0 {
		fmt.Fprintln(w, "    no label maps to a resource: the series yields no custom metric")
	}
	nsGR := schema.GroupResource{Resource: "namespaces"}
	nsLabel, _ := r.LabelForResource(nsGR)
	for _, gr := range resources {
		label, err := r.LabelForResource(gr)
		if err != nil {
			fmt.Fprintf(w, "    %s: %v\n", gr, err)
			continue
		}
		req := rules.CustomRequest{Series: s.Name, Resource: gr, Names: []string{s.Labels[label]}}
		if namespaced && gr != nsGR {
			req.Namespace = s.Labels[nsLabel]
		}
		q, err := r.CustomQuery(req)
		printQuery(w, fmt.Sprintf("    %s %q (namespace %s)", gr.String(), s.Labels[label], quoteOrNone(req.Namespace)), q, err)
	}
}

func printQuery(w io.Writer, what, q string, err error) {
	if err != nil {
		fmt.Fprintf(w, "%s: error: %v\n", what, err)
		return
	}
	fmt.Fprintf(w, "%s:\n      %s\n", what, q)
}

func quoteOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return fmt.Sprintf("%q", s)
}

// SeriesQuerySelects reports whether the series selector selector (a rule's
// seriesQuery, valid since the rule set loaded) selects s, as Prometheus would: every
// matcher holds on s's labels, the name as __name__, absent labels as "".
func SeriesQuerySelects(selector string, s Series) bool {
	matchers, err := rulefile.ParseSeriesSelector(selector)
	if err != nil {
		return false
	}
	for _, m := range matchers {
		value := s.Labels[m.Name]
		if m.Name == "__name__" {
			value = s.Name
		}
		if !m.Matches(value) {
			return false
		}
	}
	return true
}

// Series is a series name with labels, as given on the command line.
type Series struct {
	Name   string
	Labels map[string]string
}

func (s Series) String() string {
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, s.Labels[k])
	}
	return s.Name + "{" + strings.Join(parts, ",") + "}"
}
