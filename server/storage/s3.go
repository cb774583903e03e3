package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// bucket is an s3 storage: objects under Prefix in one bucket of an S3-compatible server.
type bucket struct {
	client *minio.Client
	bucket string
	prefix string // "" or "dir/" (with the slash)
}

// S3Config is what OpenS3 needs.
type S3Config struct {
	Endpoint, Bucket, Region, Prefix, AccessKey, Secret string
	// Transport carries the requests (nil: http.DefaultTransport's settings).
	Transport http.RoundTripper
}

// OpenS3 returns the Objects of an S3-compatible bucket. It makes no request: a wrong
// endpoint or key shows at the first call (Check makes one).
func OpenS3(c S3Config) (Objects, error) {
	host, secure, err := parseEndpoint(c.Endpoint)
	if err != nil {
		return nil, err
	}
	var creds *credentials.Credentials
	if c.AccessKey != "" || c.Secret != "" {
		creds = credentials.NewStaticV4(c.AccessKey, c.Secret, "")
	} else {
		creds = credentials.New(&credentials.Static{}) // anonymous
	}
	client, err := minio.New(host, &minio.Options{Creds: creds, Secure: secure, Region: c.Region,
		Transport: c.Transport, BucketLookup: minio.BucketLookupAuto, MaxRetries: 1})
	if err != nil {
		return nil, fmt.Errorf("s3 client for %s: %w", host, err)
	}
	prefix := strings.Trim(c.Prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &bucket{client: client, bucket: c.Bucket, prefix: prefix}, nil
}

func (b *bucket) key(name string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	return b.prefix + name, nil
}

func (b *bucket) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	key, err := b.key(name)
	if err != nil {
		return err
	}
	// An S3 PUT is atomic: a body cut short fails the request and stores nothing.
	_, err = b.client.PutObject(ctx, b.bucket, key, r, size, minio.PutObjectOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return fmt.Errorf("put %s: %w", name, s3Error(err))
	}
	return nil
}

func (b *bucket) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	key, err := b.key(name)
	if err != nil {
		return nil, err
	}
	// GetObject makes no request until the first read; Stat first, so a missing object is an
	// error here and not at the reader.
	obj, err := b.client.GetObject(ctx, b.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", name, s3Error(err))
	}
	if _, err := obj.Stat(); err != nil {
		obj.Close()
		return nil, b.objectError("get", name, err)
	}
	return obj, nil
}

func (b *bucket) Stat(ctx context.Context, name string) (Object, error) {
	key, err := b.key(name)
	if err != nil {
		return Object{}, err
	}
	info, err := b.client.StatObject(ctx, b.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Object{}, b.objectError("stat", name, err)
	}
	return Object{Name: name, Size: info.Size, Modified: info.LastModified.UTC()}, nil
}

func (b *bucket) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	for info := range b.client.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: b.prefix + prefix, Recursive: true}) {
		if info.Err != nil {
			return nil, fmt.Errorf("list %s: %w", b.bucket, s3Error(info.Err))
		}
		out = append(out, Object{Name: strings.TrimPrefix(info.Key, b.prefix), Size: info.Size, Modified: info.LastModified.UTC()})
	}
	return out, nil
}

func (b *bucket) Delete(ctx context.Context, name string) error {
	key, err := b.key(name)
	if err != nil {
		return err
	}
	if err := b.client.RemoveObject(ctx, b.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil
		}
		return fmt.Errorf("delete %s: %w", name, s3Error(err))
	}
	return nil
}

func (b *bucket) objectError(verb, name string, err error) error {
	if minio.ToErrorResponse(err).Code == "NoSuchKey" || minio.ToErrorResponse(err).StatusCode == http.StatusNotFound &&
		minio.ToErrorResponse(err).Code != "NoSuchBucket" {
		return fmt.Errorf("%w: %s", ErrObjectNotFound, name)
	}
	return fmt.Errorf("%s %s: %w", verb, name, s3Error(err))
}

// s3Error makes an S3 server's refusal readable: its code and message, and the status, which
// is all a reason needs (the request ids are noise).
func s3Error(err error) error {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && resp.Code != "" {
		msg := resp.Message
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		return fmt.Errorf("the S3 server answered %d %s: %s", resp.StatusCode, resp.Code, msg)
	}
	return err
}
