package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/core"
)

// Rerank: POST /v1/rerank in the shape Jina, Cohere and llama-server share (OpenAI has no
// rerank): {model, query, documents, top_n, return_documents} answers {model, object "list",
// results: [{index, relevance_score, document?}], usage}. documents are strings, or objects
// with a "text" (Cohere's and Jina's other form). Results come most relevant first; top_n
// (at least 1) keeps that many; return_documents (default false, as Cohere) adds each
// document as {"text": ...}. A reranker (a GGUF with a rank pooling head) gives the scores;
// an embedding model gives the cosine similarity of the query's and the document's vectors.
// A query or document longer than the window is cut to fit, as Cohere and Jina do. A
// generation-only model is a 400 unsupported_model.

type rerankRequest struct {
	Model           *string           `json:"model"`
	Query           *string           `json:"query"`
	Documents       []json.RawMessage `json:"documents"`
	TopN            *int              `json:"top_n"`
	ReturnDocuments bool              `json:"return_documents"`
}

type rerankResponse struct {
	Model   string         `json:"model"`
	Object  string         `json:"object"`
	Results []rerankResult `json:"results"`
	Usage   embeddingUsage `json:"usage"`
}

type rerankResult struct {
	Index          int             `json:"index"`
	RelevanceScore float64         `json:"relevance_score"`
	Document       *rerankDocument `json:"document,omitempty"`
}

type rerankDocument struct {
	Text string `json:"text"`
}

func (h *handlers) rerank(c *gin.Context) error {
	var req rerankRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	switch {
	case req.Model == nil || *req.Model == "":
		return invalid("model", "you must provide a model parameter")
	case req.Query == nil || *req.Query == "":
		return invalid("query", "you must provide the query to rank the documents against")
	case len(req.Documents) == 0:
		return invalid("documents", "you must provide at least one document to rank")
	case req.TopN != nil && *req.TopN < 1:
		return invalid("top_n", fmt.Sprintf("top_n %d is less than 1; give the number of results to keep, or leave it out for all", *req.TopN))
	}
	docs := make([]string, len(req.Documents))
	for i, raw := range req.Documents {
		text, err := documentText(raw)
		if err != nil {
			return invalid("documents", fmt.Sprintf("documents[%d]: %v", i, err))
		}
		docs[i] = text
	}
	creq := &core.RerankRequest{ID: newID("rerank-"), Endpoint: "/v1/rerank", Model: *req.Model, Query: *req.Query,
		Documents: docs, Truncate: true}
	if req.TopN != nil {
		creq.TopN = *req.TopN
	}
	res, err := h.svc.Rerank(c.Request.Context(), creq)
	if err != nil {
		return embedError(err)
	}
	out := rerankResponse{Model: *req.Model, Object: "list", Results: make([]rerankResult, len(res.Results)),
		Usage: embeddingUsage{PromptTokens: res.PromptTokens, TotalTokens: res.PromptTokens}}
	for i, r := range res.Results {
		out.Results[i] = rerankResult{Index: r.Index, RelevanceScore: r.Score}
		if req.ReturnDocuments {
			out.Results[i].Document = &rerankDocument{Text: docs[r.Index]}
		}
	}
	c.JSON(http.StatusOK, out)
	return nil
}

// documentText is a document given as a string or as {"text": ...}.
func documentText(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var obj struct {
		Text *string `json:"text"`
	}
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) && json.Unmarshal(raw, &obj) == nil && obj.Text != nil {
		return *obj.Text, nil
	}
	return "", fmt.Errorf("a document must be a string or an object with a \"text\" string")
}
