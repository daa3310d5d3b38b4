import Testing
@testable import HTTP

@Suite struct CredentialsTests {
    @Test func bearerTokensAndComparingThem() {
        #expect(Credentials.bearer(["Authorization": "Bearer  abc "]) == "abc")
        #expect(Credentials.bearer(["Authorization": "bearer abc"]) == "abc")
        #expect(Credentials.bearer(["Authorization": "Basic YWJj"]) == nil)
        #expect(Credentials.bearer(["Authorization": "Bearer   "]) == nil)
        #expect(Credentials.bearer([:]) == nil)
        #expect(Credentials.matches("secret", "secret"))
        #expect(!Credentials.matches("secre", "secret") && !Credentials.matches("secrets", "secret") && !Credentials.matches("", "secret"))
        #expect(!Credentials.matches("Secret", "secret"))
    }
}
