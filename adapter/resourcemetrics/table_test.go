package resourcemetrics

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
)

const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

type table struct {
	Kind    string `json:"kind"`
	Columns []struct {
		Name, Type, Format string
	} `json:"columnDefinitions"`
	Rows []struct {
		Cells  []any          `json:"cells"`
		Object map[string]any `json:"object"`
	} `json:"rows"`
}

func TestTables(t *testing.T) {
	h := newHandler(t, fixtureGetter())
	wantColumns := []string{"Name:string:name", "cpu:string:quantity", "memory:string:quantity", "Window:string:duration"}
	for _, v := range versions {
		base := "/apis/metrics.k8s.io/" + v
		for _, tc := range []struct {
			path string
			rows [][]any
		}{
			// web-1's two containers summed: 500m+125m, 96Mi+32Mi.
			{"/namespaces/a/pods", [][]any{{"web-0", "250m", "64Mi", "1m0s"}, {"web-1", "625m", "128Mi", "1m0s"}}},
			{"/namespaces/a/pods/web-1", [][]any{{"web-1", "625m", "128Mi", "1m0s"}}},
			{"/nodes", [][]any{{"n1", "1500m", "2Gi", "1m0s"}, {"n2", "750m", "1Gi", "1m0s"}}},
			{"/nodes/n2", [][]any{{"n2", "750m", "1Gi", "1m0s"}}},
		} {
			t.Run(v+tc.path, func(t *testing.T) {
				code, body := get(t, h, base+tc.path, tableAccept)
				var tab table
				if err := json.Unmarshal(body, &tab); err != nil || code != http.StatusOK || tab.Kind != "Table" {
					t.Fatalf("%d %v: %s", code, err, body)
				}
				var cols []string
				for _, c := range tab.Columns {
					cols = append(cols, c.Name+":"+c.Type+":"+c.Format)
				}
				if !reflect.DeepEqual(cols, wantColumns) {
					t.Errorf("columns %v, want %v", cols, wantColumns)
				}
				var rows [][]any
				for _, r := range tab.Rows {
					rows = append(rows, r.Cells)
					// The default includeObject=Metadata: the row's object is its metadata.
					if r.Object["kind"] != "PartialObjectMetadata" {
						t.Errorf("row object %v", r.Object)
					}
				}
				if !reflect.DeepEqual(rows, tc.rows) {
					t.Errorf("rows %v, want %v", rows, tc.rows)
				}
			})
		}
		t.Run(v+" empty list", func(t *testing.T) {
			code, body := get(t, h, base+"/namespaces/c/pods", tableAccept)
			var tab table
			if err := json.Unmarshal(body, &tab); err != nil || code != http.StatusOK || len(tab.Rows) != 0 || len(tab.Columns) != 0 {
				t.Errorf("%d %v: %s", code, err, body)
			}
		})
	}
}
