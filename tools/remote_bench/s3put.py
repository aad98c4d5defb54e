"""s3put.py ENDPOINT BUCKET ROOT: uploads every file below ROOT to BUCKET through the S3 API
(PutObject, SigV4 with AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY), keys relative to ROOT, so
that the server stores each object as an upload does (its ETag among it); creates the bucket."""
import datetime, hashlib, hmac, http.client, os, sys, urllib.parse
endpoint, bucket, root = sys.argv[1:4]
host, port = urllib.parse.urlparse(endpoint).hostname, urllib.parse.urlparse(endpoint).port
ak, sk, region = os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"], "us-east-1"
def mac(key, text): return hmac.new(key, text.encode(), hashlib.sha256).digest()
def request(method, path, data=b""):
    now = datetime.datetime.now(datetime.timezone.utc)
    amz, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    payload = hashlib.sha256(data).hexdigest()
    headers = {"host": f"{host}:{port}", "x-amz-content-sha256": payload, "x-amz-date": amz}
    signed = ";".join(sorted(headers))
    canonical = "\n".join([method, path, "", "".join(f"{k}:{headers[k]}\n" for k in sorted(headers)), signed, payload])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = mac(mac(mac(mac(("AWS4" + sk).encode(), day), region), "s3"), "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = f"AWS4-HMAC-SHA256 Credential={ak}/{scope}, SignedHeaders={signed}, Signature={signature}"
    conn = http.client.HTTPConnection(host, port)
    conn.request(method, path, body=data, headers=headers)
    answer = conn.getresponse(); body = answer.read(); conn.close()
    return answer.status, body
status, body = request("PUT", f"/{bucket}")
print("bucket", status, flush=True)
n = 0
for folder, _, files in os.walk(root):
    for f in sorted(files):
        path = os.path.join(folder, f)
        key = os.path.relpath(path, root)
        status, body = request("PUT", "/" + bucket + "/" + urllib.parse.quote(key), open(path, "rb").read())
        assert status == 200, (key, status, body[:300])
        n += 1
print("uploaded", n, "objects", flush=True)
