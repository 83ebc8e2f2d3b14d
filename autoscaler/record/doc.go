// Package record builds the decision record of an evaluation — what was
// read, what each metric proposed, which proposal won, which rules changed it
// and whether the scale was written — from the pure results of the decide and
// adjust stages. It also encodes the record for the annotation of drop-in
// HPAs and tells whether two records describe the same outcome (the rule that
// keeps record writes from adding API writes).
package record
