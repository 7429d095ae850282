use super::sandbox::escape_html;

#[test]
fn html_is_escaped_for_text_and_quoted_attributes() {
    assert_eq!(
        escape_html(r#"<a href="x">Tom & 'Jerry'</a>"#),
        "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"
    );
}
