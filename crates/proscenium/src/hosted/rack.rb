# Proscenium's Rack adapter: runs the Rack app of a config.ru in one interpreter
# process of a pool Proscenium supervises, one request at a time. Proscenium parses
# HTTP, applies its limits and timeouts, and speaks to this process over its standard
# input and output in frames (hosted/framing.rs says the format):
#
#   request:  a JSON object of the environment's strings, then the body in frames,
#             then an empty frame;
#   response: a JSON object {"status": N, "headers": [[name, value], ...]}, then the
#             body in frames, then an empty frame;
#   and first, once the app has loaded, an empty frame.
#
# What the app prints goes to standard error, Proscenium's log, never into the frames.
# An app that raises before its answer's head gets 500 (its backtrace logged); one that
# raises while its body is written ends this process, so Proscenium cuts the answer
# short and starts another.
#
# Usage: ruby rack.rb CONFIG_RU

require "json"
require "stringio"
require "rack"

# Reads one frame from `io`: its bytes, or nil at the end of the input.
def read_frame(io)
  head = io.read(4)
  return nil if head.nil?
  raise EOFError, "a frame's length cut short" if head.bytesize < 4

  length = head.unpack1("N")
  return "".b if length.zero?

  bytes = io.read(length)
  raise EOFError, "a frame cut short" if bytes.nil? || bytes.bytesize < length

  bytes
end

def write_frame(io, bytes)
  io.write([bytes.bytesize].pack("N"), bytes)
end

# The answer's head: a Rack header value holding several lines (Rack 2's Set-Cookie)
# is one field a line.
def head_of(status, headers)
  fields = []
  headers.each do |name, value|
    Array(value).each { |v| v.to_s.split("\n").each { |line| fields << [name.to_s, line] } }
  end
  JSON.generate({ "status" => status.to_i, "headers" => fields })
end

def failed(error, output)
  warn "rack: #{error.class}: #{error.message}"
  error.backtrace&.each { |line| warn "  #{line}" }
  write_frame(output, head_of(500, { "content-type" => "text/plain" }))
  write_frame(output, "500 Internal Server Error: the app raised an error\n")
  write_frame(output, "")
end

built = Rack::Builder.parse_file(ARGV.fetch(0))
# Rack 2 gives the app and the file's options; Rack 3 the app alone.
app = built.is_a?(Array) ? built.first : built

input = $stdin.binmode
output = $stdout.binmode
$stdout = $stderr
# Loaded: an empty frame says so, before the first request.
write_frame(output, "")
output.flush

while (meta = read_frame(input))
  env = JSON.parse(meta)
  body = String.new(encoding: Encoding::BINARY)
  while (chunk = read_frame(input)) && !chunk.empty?
    body << chunk
  end
  env["rack.input"] = StringIO.new(body)
  env["rack.errors"] = $stderr
  env["rack.version"] = Rack::VERSION
  env["rack.url_scheme"] = env.delete("proscenium.url_scheme") || "http"
  env["rack.multithread"] = false
  env["rack.multiprocess"] = true
  env["rack.run_once"] = false
  env["rack.hijack?"] = false
  head_written = false
  begin
    status, headers, chunks = app.call(env)
    write_frame(output, head_of(status, headers))
    head_written = true
    begin
      chunks.each { |chunk| write_frame(output, chunk.to_s.b) unless chunk.to_s.empty? }
    ensure
      chunks.close if chunks.respond_to?(:close)
    end
    write_frame(output, "")
  rescue StandardError, ScriptError => e
    raise if head_written

    failed(e, output)
  end
  output.flush
end
