# The lab's Rack app: lab-app's /plaintext and /json, for Puma and for
# `proscenium serve --rack` (the `puma` and `proscenium-rack` servers).
PLAIN = "Hello, World!".freeze
JSON_BODY = '{"message":"Hello, World!"}'.freeze

run lambda { |env|
  case env["PATH_INFO"]
  when "/json" then [200, { "content-type" => "application/json" }, [JSON_BODY]]
  else [200, { "content-type" => "text/plain" }, [PLAIN]]
  end
}
