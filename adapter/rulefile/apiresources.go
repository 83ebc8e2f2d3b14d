package rulefile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/restmapper"
)

// ParseAPIResources reads a cluster's resources from what kubectl prints, for
// checking rule files offline against custom resources. data is either
//
//   - the table of `kubectl api-resources` (with or without -o wide): a header
//     line naming at least NAME, APIVERSION, NAMESPACED and KIND, then one resource
//     a line; or
//   - one or more APIResourceList objects, JSON or YAML, as
//     `kubectl get --raw /apis/GROUP/VERSION` prints them (several may follow each
//     other, or be YAML documents of one file).
//
// Errors name the line (table) or the object (lists) and the field that is wrong.
func ParseAPIResources(data []byte) ([]metav1.APIResourceList, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("no resources: the file is empty")
	}
	if first, _, _ := strings.Cut(string(trimmed), "\n"); strings.HasPrefix(strings.TrimSpace(first), "NAME ") {
		return parseAPIResourcesTable(trimmed)
	}
	return parseAPIResourceLists(trimmed)
}

// apiResourcesColumns are the columns of kubectl api-resources the mapper needs.
var apiResourcesColumns = []string{"NAME", "APIVERSION", "NAMESPACED", "KIND"}

// parseAPIResourcesTable reads kubectl's table by the header's column offsets:
// SHORTNAMES may be empty, so splitting on spaces would shift the columns.
func parseAPIResourcesTable(data []byte) ([]metav1.APIResourceList, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	sc.Scan()
	header := sc.Text()
	starts, err := columnStarts(header)
	if err != nil {
		return nil, err
	}
	byGV := map[string]*metav1.APIResourceList{}
	var order []string
	for line := 2; sc.Scan(); line++ {
		text := sc.Text()
		if strings.TrimSpace(text) == "" {
			continue
		}
		col := func(name string) string { return cell(text, starts, name) }
		gv, err := schema.ParseGroupVersion(col("APIVERSION"))
		if err != nil || gv.Version == "" {
			return nil, fmt.Errorf("line %d: APIVERSION %q is not GROUP/VERSION or VERSION", line, col("APIVERSION"))
		}
		name, kind, namespaced := col("NAME"), col("KIND"), col("NAMESPACED")
		if name == "" || kind == "" || (namespaced != "true" && namespaced != "false") {
			return nil, fmt.Errorf("line %d: want NAME, KIND and NAMESPACED true or false, found %q, %q, %q", line, name, kind, namespaced)
		}
		key := gv.String()
		if byGV[key] == nil {
			byGV[key] = &metav1.APIResourceList{GroupVersion: key}
			order = append(order, key)
		}
		byGV[key].APIResources = append(byGV[key].APIResources, metav1.APIResource{
			Name: name, Kind: kind, Namespaced: namespaced == "true", Group: gv.Group, Version: gv.Version,
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read table: %w", err)
	}
	out := make([]metav1.APIResourceList, len(order))
	for i, key := range order {
		out[i] = *byGV[key]
	}
	return out, nil
}

// columnStarts returns the offset of every column of the header; the needed ones must
// be there.
func columnStarts(header string) (map[string]int, error) {
	starts := map[string]int{}
	for i := 0; i < len(header); {
		for i < len(header) && header[i] == ' ' {
			i++
		}
		j := i
		for j < len(header) && header[j] != ' ' {
			j++
		}
		if j > i {
			starts[header[i:j]] = i
		}
		i = j
	}
	for _, c := range apiResourcesColumns {
		if _, ok := starts[c]; !ok {
			return nil, fmt.Errorf("line 1: the header has no %s column (want the output of kubectl api-resources)", c)
		}
	}
	return starts, nil
}

// cell is the text of column name on line: from its header's offset to the next
// column's, trimmed.
func cell(line string, starts map[string]int, name string) string {
	from := starts[name]
	to := len(line)
	for _, s := range starts {
		if s > from && s < to {
			to = s
		}
	}
	if from >= len(line) {
		return ""
	}
	return strings.TrimSpace(line[from:min(to, len(line))])
}

// parseAPIResourceLists reads a stream of APIResourceList objects (JSON or YAML).
func parseAPIResourceLists(data []byte) ([]metav1.APIResourceList, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []metav1.APIResourceList
	for i := 0; ; i++ {
		var l metav1.APIResourceList
		err := dec.Decode(&l)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("APIResourceList %d: %w", i, err)
		}
		if l.Kind != "" && l.Kind != "APIResourceList" {
			return nil, fmt.Errorf("APIResourceList %d: kind: want APIResourceList, found %q", i, l.Kind)
		}
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil || gv.Version == "" {
			return nil, fmt.Errorf("APIResourceList %d: groupVersion: %q is not GROUP/VERSION or VERSION", i, l.GroupVersion)
		}
		for j, r := range l.APIResources {
			if r.Name == "" || r.Kind == "" {
				return nil, fmt.Errorf("APIResourceList %d (%s): resources[%d]: name and kind must be set", i, l.GroupVersion, j)
			}
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil, errors.New("no resources: the file holds no APIResourceList")
	}
	return out, nil
}

// RESTMapperWith returns DefaultRESTMapper's built-in resources together with those of
// lists (a cluster's, from ParseAPIResources or discovery). A group the lists hold
// replaces the built-in group of the same name, so a cluster's own view wins.
// Subresources (names with a slash) are left out, as discovery does.
func RESTMapperWith(lists []metav1.APIResourceList) meta.RESTMapper {
	byGroup := map[string]*restmapper.APIGroupResources{}
	var names []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		g := byGroup[gv.Group]
		if g == nil {
			g = &restmapper.APIGroupResources{Group: metav1.APIGroup{Name: gv.Group}, VersionedResources: map[string][]metav1.APIResource{}}
			byGroup[gv.Group] = g
			names = append(names, gv.Group)
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			r.Group, r.Version = gv.Group, gv.Version
			g.VersionedResources[gv.Version] = append(g.VersionedResources[gv.Version], r)
		}
	}
	var groups []*restmapper.APIGroupResources
	for _, b := range builtinGroupResources() {
		if byGroup[b.Group.Name] == nil {
			groups = append(groups, b)
		}
	}
	for _, name := range names {
		setVersions(byGroup[name])
		if name == "" { // the core group first, as discovery lists it
			groups = append([]*restmapper.APIGroupResources{byGroup[name]}, groups...)
			continue
		}
		groups = append(groups, byGroup[name])
	}
	return restmapper.NewDiscoveryRESTMapper(groups)
}
