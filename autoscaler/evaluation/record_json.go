package evaluation

import (
	"encoding/json"
	"fmt"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// EncodeRecord returns the record as compact JSON, the value of
// v1alpha1.LastDecisionAnnotation.
func EncodeRecord(r *v1alpha1.DecisionRecord) (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode decision record: %w", err)
	}
	return string(b), nil
}

// DecodeRecord parses the value of v1alpha1.LastDecisionAnnotation.
func DecodeRecord(s string) (*v1alpha1.DecisionRecord, error) {
	var r v1alpha1.DecisionRecord
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("decode decision record: %w", err)
	}
	return &r, nil
}
