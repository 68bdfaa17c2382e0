//! The SOAP benches' shared answer (`soap_codec` reads it, `soap_call`'s stub sends it), so
//! both measure the same bytes.

/// A SOAP 1.1 answer listing `n` customer records (an attribute, a number and a boolean
/// each): what `soap_codec` reads and `soap_call`'s stub answers.
pub(crate) fn answer(n: usize) -> String {
    let mut records = String::new();
    for i in 1..=n {
        records.push_str(&format!(
            "<c:Customer id=\"{i}\"><c:Name>Customer {i} &amp; Sons</c:Name>\
             <c:Email>customer{i}@example.com</c:Email><c:Phone>+351 21 000 00{i:02}</c:Phone>\
             <c:City>Lisbon</c:City><c:Segment>retail</c:Segment>\
             <c:Balance>{i}23.45</c:Balance><c:Active>{}</c:Active></c:Customer>",
            i % 2 == 0
        ));
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><soap:Envelope \
         xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body>\
         <c:ListCustomersResponse xmlns:c=\"urn:crm\"><c:ListCustomersResult>{records}\
         </c:ListCustomersResult></c:ListCustomersResponse></soap:Body></soap:Envelope>"
    )
}
