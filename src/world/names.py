"""Name pools of the biography world and the weak lean of a person's name toward their birth region.

Each pool is a culture's given names (male, female) and family names, written by hand for this
project, with its conventions: name order (family name first for Chinese, Korean and Vietnamese
names), optional middle names or double family names, feminine family-name forms (Polish, Czech,
Russian, Bulgarian, Greek) and, for Russian and Greek names, the name in its own script.

Each region (see `world.places.REGIONS`) has a mixture of pools. A person's given name and family
name are drawn independently: each comes from a pool of the birth region's mixture with
probability `lean`, otherwise from the world-wide mixture (the regions weighted by how often they
are birthplaces). So a name says a little about where a person was born, never much.
"""
from dataclasses import dataclass

# region -> {pool: weight}
REGION_POOLS = {
    "BRI": {"ang": 0.72, "cel": 0.28},
    "NAM": {"ang": 0.76, "cel": 0.06, "ger": 0.04, "ita": 0.04, "heb": 0.04, "lat": 0.03,
            "pol": 0.03},
    "OCE": {"ang": 0.82, "cel": 0.15, "gre": 0.03},
    "FRA": {"fra": 1.0},
    "GER": {"ger": 1.0},
    "NLD": {"nld": 1.0},
    "ITA": {"ita": 1.0},
    "SPA": {"spa": 1.0},
    "POR": {"por": 1.0},
    "BRZ": {"por": 0.85, "ita": 0.1, "ger": 0.05},
    "LAT": {"lat": 0.65, "spa": 0.3, "ita": 0.05},
    "NOR": {"sca": 1.0},
    "POL": {"pol": 1.0},
    "CZE": {"cze": 1.0},
    "HUN": {"hun": 1.0},
    "RUS": {"rus": 0.9, "heb": 0.1},
    "GRE": {"gre": 1.0},
    "ROM": {"rom": 1.0},
    "YUG": {"yug": 1.0},
    "TUR": {"tur": 1.0},
    "ARA": {"ara": 1.0},
    "IRN": {"per": 1.0},
    "ISR": {"heb": 1.0},
    "SAS": {"ind": 1.0},
    "CHN": {"chn": 1.0},
    "JPN": {"jpn": 1.0},
    "KOR": {"kor": 1.0},
    "VIE": {"vie": 1.0},
    "SEA": {"sea": 1.0},
    "WAF": {"waf": 1.0},
    "EAF": {"eaf": 1.0},
    "SAF": {"saf": 0.6, "ang": 0.3, "nld": 0.1},
    "CAR": {"ang": 0.6, "waf": 0.25, "cel": 0.1, "fra": 0.05},
}

# Pools: "male", "female", "family" are comma-separated; an entry "Latin:Native" carries the
# native-script form, and "Masc/Fem" (on either side) gives a feminine family-name form.
_POOL_TEXT = {
    "ang": dict(
        male="""James, John, William, Thomas, George, David, Richard, Robert, Charles, Michael,
            Edward, Henry, Peter, Andrew, Daniel, Matthew, Christopher, Stephen, Mark, Paul,
            Anthony, Joseph, Samuel, Benjamin, Alexander, Jonathan, Timothy, Simon, Nicholas,
            Arthur, Frederick, Albert, Walter, Harold, Ernest, Alfred, Leonard, Raymond, Kenneth,
            Douglas, Gordon, Philip, Martin, Howard, Oliver, Harry, Jack, Luke, Adam, Ryan,
            Nathan, Joshua, Kevin, Brian, Gary, Scott, Dennis, Eugene, Roger, Wallace""",
        female="""Mary, Elizabeth, Margaret, Sarah, Anne, Jane, Emily, Charlotte, Catherine, Alice,
            Helen, Susan, Ruth, Dorothy, Edith, Grace, Lucy, Emma, Hannah, Rebecca, Rachel, Laura,
            Jessica, Amy, Claire, Louise, Caroline, Harriet, Eleanor, Beatrice, Mabel, Gladys,
            Joan, Patricia, Barbara, Linda, Karen, Judith, Diane, Sharon, Amanda, Jennifer, Megan,
            Chloe, Olivia, Sophie, Abigail, Evelyn, Violet, Zoë, Marjorie, Winifred""",
        family="""Smith, Jones, Taylor, Brown, Williams, Wilson, Johnson, Davies, Robinson, Wright,
            Thompson, Evans, Walker, White, Roberts, Green, Hall, Wood, Jackson, Clarke, Harris,
            Clark, Lewis, Baker, Turner, Hill, Cooper, Ward, Morris, Moore, King, Allen, Young,
            Scott, Mitchell, Parker, Bennett, Cook, Carter, Phillips, Shaw, Lee, Harrison, Watson,
            Edwards, Hughes, Collins, Stewart, Morgan, Bell, Russell, Palmer, Ellis, Marshall,
            Webb, Barnes, Fisher, Hunt, Mills, Knight, Fox, Gibson, Rose, Grant, Graham, Wells,
            Ford, Cole, Owen, Dixon, Reynolds, Sutton, Fletcher, Barker, Hawkins, Chapman,
            Spencer, Pearson, Holmes, Matthews, Lawrence, Porter, Stevens, Hayes, Foster, Marsh,
            Powell, Sanders, Price, Bishop, Harvey, Dawson, Lloyd, Mason, Whitaker, Ashworth,
            Pemberton, Blackwood, Thornton, Kendrick, Sherwood, Caldwell, Hargreaves, Crawley""",
        middle=0.18),
    "cel": dict(
        male="""Patrick, Seán, Liam, Séamus, Declan, Ciarán, Pádraig, Eoin, Cormac, Fergus,
            Angus, Callum, Hamish, Lachlan, Alasdair, Euan, Dougal, Ewan, Rhys, Dafydd, Gareth,
            Gwilym, Owain, Emrys, Brendan, Kieran, Niall, Dónal, Colm, Ruairí""",
        female="""Siobhán, Niamh, Aoife, Sinéad, Róisín, Bridget, Maeve, Orla, Eileen, Fiona,
            Morag, Isla, Eilidh, Catriona, Kirsty, Mhairi, Ailsa, Rhiannon, Bethan, Gwen, Seren,
            Cerys, Nia, Gráinne, Deirdre, Máiréad, Saoirse""",
        family="""O'Brien, O'Connor, O'Neill, O'Sullivan, Kelly, Walsh, Byrne, McCarthy, Doyle,
            Gallagher, Quinn, Brennan, Fitzgerald, Kavanagh, Donnelly, MacDonald, MacLeod,
            Campbell, Fraser, Robertson, Cameron, Sinclair, Munro, Mackenzie, Ross, Murray,
            Buchanan, Ferguson, Kerr, MacGregor, Jenkins, Pritchard, Llewellyn, Vaughan, Bowen,
            Rees, Griffith, Howells, Meredith, Murphy, Ó Ceallaigh, McAllister""",
        middle=0.1),
    "fra": dict(
        male="""Jean, Pierre, Jacques, Louis, François, Michel, André, Philippe, Henri, Claude,
            Marcel, Étienne, Lucien, Émile, Gérard, Julien, Nicolas, Antoine, Olivier, Thierry,
            Yves, Guillaume, Mathieu, Benoît, Jean-Pierre, Jean-Luc, Hervé, Rémi, Frédéric,
            Raphaël, Joël, Gaël""",
        female="""Marie, Jeanne, Françoise, Monique, Nathalie, Isabelle, Sylvie, Hélène, Camille,
            Juliette, Chantal, Geneviève, Brigitte, Élise, Amélie, Céline, Margaux, Aurélie,
            Madeleine, Colette, Simone, Odile, Véronique, Agnès, Mathilde, Léa, Anne-Marie,
            Solène, Maëlle, Noémie""",
        family="""Martin, Dubois, Thomas, Robert, Richard, Petit, Durand, Leroy, Moreau, Simon,
            Laurent, Lefebvre, Michel, David, Bertrand, Roux, Vincent, Fournier, Morel, Girard,
            Bonnet, Dupont, Lambert, Fontaine, Rousseau, Blanc, Guérin, Faure, Mercier,
            Chevalier, Legrand, Gauthier, Perrin, Lemaire, Boucher, Leclerc, Deschamps, Barbier,
            Marchand, Renard, Duval, Lacroix, Brunet, Dumas, Picard, Lefèvre, Bérenger, Aubert"""),
    "ger": dict(
        male="""Hans, Karl, Friedrich, Wilhelm, Heinrich, Otto, Ernst, Hermann, Kurt, Klaus,
            Jürgen, Dieter, Wolfgang, Günter, Helmut, Manfred, Rainer, Uwe, Stefan, Jörg,
            Matthias, Lukas, Felix, Maximilian, Florian, Tobias, Johannes, Gerhard, Rudolf,
            Fritz, Siegfried, Horst, Bernd, Konrad, Ulrich""",
        female="""Anna, Maria, Elisabeth, Margarete, Gertrud, Ilse, Ursula, Helga, Ingrid, Renate,
            Monika, Sabine, Petra, Andrea, Claudia, Katrin, Susanne, Heike, Birgit, Jutta, Lena,
            Leonie, Johanna, Greta, Hedwig, Käthe, Liesel, Lotte, Friederike, Dörte, Frauke,
            Gudrun""",
        family="""Müller, Schmidt, Schneider, Fischer, Weber, Meyer, Wagner, Becker, Schulz,
            Hoffmann, Schäfer, Koch, Bauer, Richter, Klein, Wolf, Schröder, Neumann, Schwarz,
            Zimmermann, Braun, Krüger, Hofmann, Hartmann, Lange, Schmitt, Werner, Krause,
            Lehmann, Köhler, Herrmann, König, Huber, Kaiser, Fuchs, Scholz, Möller, Weiß, Jung,
            Hahn, Vogel, Keller, Günther, Berger, Winkler, Roth, Beck, Lorenz, Baumann,
            Albrecht, Schuster, Böhm, Kraus, Schumacher, Krämer, Vogt, Stein, Jäger, Sommer,
            Groß, Seidel, Brandt, Haas, Ziegler, Kühn, Engel, Bergmann, Pfeiffer, Straßer"""),
    "nld": dict(
        male="""Jan, Pieter, Hendrik, Willem, Cornelis, Gerrit, Dirk, Joost, Maarten, Bram,
            Sander, Ruud, Koen, Thijs, Jeroen, Bart, Wouter, Stijn, Geert, Luuk, Floris, Jasper,
            Wim, Marnix, Ruben, Lieven""",
        female="""Annelies, Femke, Sanne, Eva, Fleur, Marieke, Mieke, Anouk, Saskia, Els, Griet,
            Hilde, Lieke, Noor, Roos, Wilhelmina, Hanneke, Marloes, Tineke, Jolien, Ineke, Linde,
            Sofie, Geertje""",
        family="""de Jong, Jansen, de Vries, van den Berg, van Dijk, Bakker, Janssen, Visser, Smit,
            Meijer, de Boer, Mulder, de Groot, Bos, Vos, Hendriks, van Leeuwen, Dekker, Brouwer,
            de Wit, Dijkstra, Smits, de Graaf, van der Meer, van der Linden, Kok, Jacobs,
            de Haan, Vermeulen, van den Heuvel, van der Veen, van Beek, de Bruijn, Peeters, Maes,
            Claes, Willems, Goossens, Wouters, De Smet, Van Damme, IJzerman"""),
    "ita": dict(
        male="""Giuseppe, Giovanni, Antonio, Mario, Luigi, Franco, Angelo, Vincenzo, Pietro,
            Salvatore, Carlo, Domenico, Bruno, Paolo, Michele, Giorgio, Alessandro, Marco,
            Andrea, Luca, Matteo, Lorenzo, Stefano, Roberto, Enrico, Umberto, Vittorio, Nicola,
            Massimo, Fabio, Riccardo, Emilio, Gianni, Niccolò""",
        female="""Giulia, Chiara, Rosa, Giuseppina, Angela, Teresa, Lucia, Carla, Paola, Elena,
            Sara, Martina, Alessandra, Valentina, Federica, Silvia, Caterina, Rita, Gabriella,
            Antonella, Ornella, Lucrezia, Serena, Ilaria, Donatella, Giovanna, Benedetta,
            Letizia""",
        family="""Rossi, Russo, Ferrari, Esposito, Bianchi, Romano, Ricci, Marino, Greco,
            Bruno, Gallo, Conti, De Luca, Mancini, Costa, Giordano, Rizzo, Lombardi, Moretti,
            Barbieri, Fontana, Santoro, Mariani, Rinaldi, Caruso, Galli, Martini, Leone, Longo,
            Gentile, Martinelli, Vitale, Lombardo, Serra, Coppola, De Santis, D'Angelo,
            Marchetti, Villa, Conte, Ferraro, Fabbri, Bianco, Marini, Grasso, Valentini, Sala,
            De Rosa, Sartori, Neri, Fiore, Testa, Monti, Cattaneo, Benedetti, Pellegrini,
            Palumbo, Sanna, Farina, Guerra, Cantù"""),
    "spa": dict(
        male="""José, Juan, Antonio, Manuel, Francisco, Luis, Javier, Carlos, Miguel, Pedro,
            Jesús, Ángel, Rafael, Fernando, Alejandro, Pablo, Sergio, Jorge, Alberto, Diego,
            Andrés, Ramón, Enrique, Vicente, Joaquín, Ignacio, Álvaro, Gonzalo, Tomás, Raúl,
            Agustín""",
        female="""María, Carmen, Josefa, Isabel, Ana, Dolores, Pilar, Teresa, Lucía, Cristina,
            Marta, Elena, Beatriz, Mercedes, Julia, Raquel, Sonia, Inés, Alicia, Nuria,
            Montserrat, Consuelo, Begoña, Amparo, Soledad, Paloma, Eva, Clara, Irene, Nerea""",
        family="""García, Fernández, González, Rodríguez, López, Martínez, Sánchez, Pérez, Gómez,
            Martín, Jiménez, Ruiz, Hernández, Díaz, Moreno, Muñoz, Álvarez, Alonso,
            Gutiérrez, Navarro, Torres, Domínguez, Vázquez, Ramos, Gil, Ramírez, Serrano, Blanco,
            Molina, Morales, Suárez, Ortega, Delgado, Castro, Ortiz, Rubio, Marín, Sanz, Núñez,
            Iglesias, Medina, Garrido, Cortés, Castillo, Lozano, Guerrero, Cano, Prieto, Méndez,
            Cruz, Calvo, Gallego, Vidal, Herrera, Márquez, Peña, Flores, Cabrera, Campos, Vega,
            Fuentes, Carrasco, Reyes, Nieto, Aguilar, Pascual, Hidalgo, Ibáñez, Ferrer, Durán,
            Benítez, Vargas, Crespo, Pastor, Soler, Bravo, Rojas""",
        double=0.25),
    "por": dict(
        male="""João, António, Francisco, Pedro, Paulo, Luís, Rui, Tiago, Nuno, Ricardo, Diogo,
            Gonçalo, Duarte, Vasco, Afonso, Sebastião, Henrique, Rodrigo, Bernardo, Eduardo,
            Marcelo, Fábio, Leandro, Thiago, Gustavo, Vinícius""",
        female="""Joana, Inês, Mariana, Rita, Catarina, Leonor, Margarida, Carolina, Luísa,
            Matilde, Filipa, Conceição, Adriana, Fernanda, Juliana, Camila, Gabriela, Letícia,
            Renata, Patrícia, Vitória, Helena, Graça""",
        family="""Silva, Santos, Ferreira, Pereira, Oliveira, Rodrigues, Martins, Sousa,
            Fernandes, Gonçalves, Gomes, Lopes, Marques, Alves, Almeida, Ribeiro, Pinto,
            Carvalho, Teixeira, Moreira, Correia, Mendes, Nunes, Soares, Vieira, Monteiro,
            Cardoso, Rocha, Neves, Coelho, Cunha, Pires, Reis, Simões, Antunes, Matos, Fonseca,
            Machado, Araújo, Barbosa, Tavares, Lourenço, Figueiredo, Azevedo, Freitas, Barros,
            Nascimento, Magalhães, Moura""",
        double=0.35),
    "lat": dict(
        male="""Mateo, Sebastián, Nicolás, Emiliano, Ernesto, Rodrigo, Guillermo, Gustavo,
            Héctor, Hugo, Julio, Octavio, Rubén, Esteban, Armando, Alfredo, Gerardo, Leonardo,
            Arturo, Mauricio, Ricardo, Jorge, Luis, Juan Pablo, César""",
        female="""Guadalupe, Valentina, Camila, Ximena, Fernanda, Daniela, Gabriela, Mariana,
            Catalina, Florencia, Verónica, Adriana, Alejandra, Claudia, Marisol, Yolanda,
            Esperanza, Graciela, Leticia, Rocío, Silvia, Patricia, Luz, Maricela""",
        family="""Quispe, Mamani, Huamán, Chávez, Mendoza, Salazar, Villalobos, Guzmán,
            Espinoza, Paredes, Aguirre, Cárdenas, Figueroa, Valdés, Zapata, Bustamante, Acosta,
            Benavides, Sepúlveda, Contreras, Pizarro, Araya, Olivares, Restrepo, Ocampo, Uribe,
            Echeverría, Gaitán, Betancourt, Rojas, Flores, Vargas, Castillo, Herrera, Ramírez""",
        double=0.2),
    "sca": dict(
        male="""Lars, Erik, Anders, Johan, Per, Nils, Olof, Sven, Björn, Gunnar, Magnus, Henrik,
            Jonas, Mikael, Ole, Knut, Arne, Håkon, Søren, Jens, Mads, Rasmus, Niels, Jesper,
            Eero, Juhani, Mikko, Jukka, Pekka, Matti, Einar, Sigurður, Jón, Ólafur, Leif,
            Torbjørn, Espen, Stig""",
        female="""Astrid, Sigrid, Karin, Britt, Ingeborg, Solveig, Liv, Kari, Hanne, Mette,
            Pernille, Signe, Freja, Maja, Ebba, Elin, Linnea, Åsa, Birgitta, Kristin, Marit, Tove,
            Aino, Kaisa, Liisa, Tuula, Sanna, Guðrún, Katrín, Dagny, Ragnhild""",
        family="""Andersson, Johansson, Karlsson, Nilsson, Eriksson, Larsson, Olsson, Persson,
            Svensson, Gustafsson, Pettersson, Jonsson, Lindberg, Lindqvist, Bergström, Sandberg,
            Forsberg, Sjöberg, Holm, Hansen, Johansen, Olsen, Larsen, Andersen, Pedersen, Nilsen,
            Kristiansen, Jensen, Nielsen, Rasmussen, Sørensen, Møller, Halvorsen, Haugen, Bakke,
            Virtanen, Korhonen, Mäkinen, Nieminen, Hämäläinen, Laine, Heikkinen, Koskinen,
            Järvinen, Lehtonen, Jónsson, Sigurðsson, Magnússon, Ström, Dahl, Nyström, Åberg,
            Öberg, Wikström"""),
    "pol": dict(
        male="""Piotr, Krzysztof, Andrzej, Tomasz, Paweł, Michał, Marcin, Jakub, Łukasz,
            Grzegorz, Mateusz, Wojciech, Mariusz, Dariusz, Zbigniew, Jerzy, Tadeusz, Stanisław,
            Kazimierz, Józef, Janusz, Ryszard, Bogdan, Czesław, Witold, Leszek, Władysław,
            Jarosław, Ignacy, Vytautas, Algirdas, Andris, Jānis, Toomas, Mart""",
        female="""Katarzyna, Małgorzata, Agnieszka, Ewa, Krystyna, Elżbieta, Zofia, Joanna,
            Magdalena, Danuta, Jadwiga, Halina, Irena, Grażyna, Beata, Dorota, Aleksandra,
            Natalia, Weronika, Wiktoria, Bożena, Urszula, Wanda, Rūta, Inga, Līga, Kadri""",
        family="""Nowak, Kowalski, Wiśniewski, Wójcik, Kowalczyk, Kamiński, Lewandowski,
            Zieliński, Szymański, Woźniak, Dąbrowski, Kozłowski, Jankowski, Mazur, Wojciechowski,
            Kwiatkowski, Krawczyk, Kaczmarek, Piotrowski, Grabowski, Zając, Pawłowski, Michalski,
            Król, Wieczorek, Jabłoński, Wróbel, Nowakowski, Majewski, Olszewski, Stępień,
            Malinowski, Jaworski, Adamczyk, Dudek, Nowicki, Pawlak, Górski, Witkowski, Walczak,
            Sikora, Baran, Rutkowski, Ostrowski, Tomaszewski, Pietrzak, Kazlauskas, Petrauskas,
            Jankauskas, Bērziņš, Kalniņš, Ozoliņš, Tamm, Saar, Sepp, Mägi"""),
    "cze": dict(
        male="""Jiří, Petr, Josef, Pavel, Tomáš, Jaroslav, Miroslav, Zdeněk, Václav, Michal,
            Karel, Vladimír, Lukáš, Ondřej, Vojtěch, Radek, Bohumil, Přemysl, Ladislav, Marek,
            Juraj, Štefan, Dušan""",
        female="""Marie, Jana, Eva, Hana, Lenka, Kateřina, Věra, Lucie, Alena, Jaroslava, Ludmila,
            Jitka, Zuzana, Božena, Michaela, Tereza, Veronika, Markéta, Dagmar, Libuše, Blanka,
            Alžběta""",
        family="""Novák, Svoboda, Novotný, Dvořák, Černý, Procházka, Kučera, Veselý, Horák,
            Pokorný, Marek, Pospíšil, Hájek, Jelínek, Král, Růžička, Beneš, Fiala, Sedláček,
            Doležal, Zeman, Kolář, Navrátil, Čermák, Urban, Blažek, Kříž, Kováč, Hudák, Polák"""),
    "hun": dict(
        male="""László, István, József, János, Zoltán, Sándor, Gábor, Ferenc, Attila, Péter,
            Tamás, Zsolt, Lajos, Imre, György, Tibor, Balázs, Csaba, Miklós, Géza, Dezső, Béla,
            Ödön, Gyula""",
        female="""Mária, Erzsébet, Katalin, Ilona, Éva, Zsuzsanna, Judit, Ágnes, Margit, Erika,
            Krisztina, Eszter, Ildikó, Irén, Gizella, Hajnalka, Réka, Boglárka, Orsolya, Dóra,
            Piroska, Klára""",
        family="""Nagy, Kovács, Tóth, Szabó, Horváth, Varga, Kiss, Molnár, Németh, Farkas,
            Balogh, Papp, Takács, Juhász, Lakatos, Mészáros, Oláh, Rácz, Fekete, Szilágyi,
            Török, Fehér, Gál, Szűcs, Kocsis, Pintér, Fodor, Szalai, Sipos, Magyar, Lukács,
            Gulyás, Biró, Király, Katona, Jakab, Vass, Hegedűs, Pásztor, Vörös, Bakos, Lengyel,
            Deák, Fazekas"""),
    "rus": dict(
        male="""Ivan:Иван, Sergei:Сергей, Dmitri:Дмитрий, Alexei:Алексей, Nikolai:Николай,
            Mikhail:Михаил, Vladimir:Владимир, Andrei:Андрей, Pavel:Павел, Yuri:Юрий,
            Boris:Борис, Igor:Игорь, Oleg:Олег, Viktor:Виктор, Anatoly:Анатолий,
            Grigory:Григорий, Konstantin:Константин, Fyodor:Фёдор, Vasily:Василий,
            Leonid:Леонид, Pyotr:Пётр, Yevgeny:Евгений, Maxim:Максим, Artem:Артём,
            Taras:Тарас, Bohdan:Богдан, Oleksandr:Олександр, Arkady:Аркадий, Gennady:Геннадий""",
        female="""Olga:Ольга, Natalia:Наталья, Elena:Елена, Tatiana:Татьяна, Irina:Ирина,
            Svetlana:Светлана, Anna:Анна, Maria:Мария, Yekaterina:Екатерина,
            Lyudmila:Людмила, Galina:Галина, Valentina:Валентина, Nadezhda:Надежда, Vera:Вера,
            Lyubov:Любовь, Oksana:Оксана, Yulia:Юлия, Anastasia:Анастасия, Darya:Дарья,
            Ksenia:Ксения, Marina:Марина, Larisa:Лариса, Zoya:Зоя, Nina:Нина, Raisa:Раиса,
            Polina:Полина""",
        family="""Ivanov:Иванов, Smirnov:Смирнов, Kuznetsov:Кузнецов, Popov:Попов,
            Vasiliev:Васильев, Petrov:Петров, Sokolov:Соколов, Mikhailov:Михайлов,
            Novikov:Новиков, Fedorov:Фёдоров, Morozov:Морозов, Volkov:Волков,
            Alekseev:Алексеев, Lebedev:Лебедев, Semenov:Семёнов, Egorov:Егоров, Pavlov:Павлов,
            Kozlov:Козлов, Stepanov:Степанов, Nikolaev:Николаев, Orlov:Орлов, Andreev:Андреев,
            Makarov:Макаров, Zakharov:Захаров, Zaitsev:Зайцев, Solovyov:Соловьёв,
            Borisov:Борисов, Vinogradov:Виноградов, Belov:Белов, Tarasov:Тарасов,
            Golubev:Голубев, Karpov:Карпов, Sorokin:Сорокин, Ilyin:Ильин, Gusev:Гусев,
            Titov:Титов, Kiselev:Киселёв, Shevchenko:Шевченко, Kovalenko:Коваленко,
            Bondarenko:Бондаренко, Tkachenko:Ткаченко, Melnyk:Мельник, Kravchenko:Кравченко,
            Lysenko:Лысенко, Rudenko:Руденко, Yakovlev:Яковлев, Gromov:Громов,
            Dobrynin:Добрынин, Vysotsky:Высоцкий, Zhukovsky:Жуковский""",
        native=0.7),
    "gre": dict(
        male="""Georgios:Γεώργιος, Dimitrios:Δημήτριος, Konstantinos:Κωνσταντίνος,
            Ioannis:Ιωάννης, Nikolaos:Νικόλαος, Panagiotis:Παναγιώτης, Vasileios:Βασίλειος,
            Christos:Χρήστος, Athanasios:Αθανάσιος, Michail:Μιχαήλ, Evangelos:Ευάγγελος,
            Spyridon:Σπυρίδων, Andreas:Ανδρέας, Stavros:Σταύρος, Theodoros:Θεόδωρος,
            Kostas:Κώστας, Yannis:Γιάννης, Nikos:Νίκος""",
        female="""Maria:Μαρία, Eleni:Ελένη, Aikaterini:Αικατερίνη, Vasiliki:Βασιλική,
            Angeliki:Αγγελική, Dimitra:Δήμητρα, Konstantina:Κωνσταντίνα,
            Paraskevi:Παρασκευή, Eirini:Ειρήνη, Despina:Δέσποινα, Anastasia:Αναστασία,
            Christina:Χριστίνα, Panagiota:Παναγιώτα, Evangelia:Ευαγγελία,
            Theodora:Θεοδώρα, Zoi:Ζωή, Kalliopi:Καλλιόπη, Ioanna:Ιωάννα,
            Chrysoula:Χρυσούλα""",
        family="""Papadopoulos/Papadopoulou:Παπαδόπουλος/Παπαδοπούλου,
            Papageorgiou:Παπαγεωργίου, Oikonomou:Οικονόμου, Georgiou:Γεωργίου,
            Nikolaidis/Nikolaidou:Νικολαΐδης/Νικολαΐδου, Pappas/Pappa:Παππάς/Παππά,
            Vlachos/Vlachou:Βλάχος/Βλάχου,
            Angelopoulos/Angelopoulou:Αγγελόπουλος/Αγγελοπούλου, Dimitriou:Δημητρίου,
            Konstantinou:Κωνσταντίνου, Alexiou:Αλεξίου,
            Karagiannis/Karagianni:Καραγιάννης/Καραγιάννη, Christodoulou:Χριστοδούλου,
            Makris/Makri:Μακρής/Μακρή, Antoniou:Αντωνίου,
            Ioannidis/Ioannidou:Ιωαννίδης/Ιωαννίδου, Mavridis/Mavridou:Μαυρίδης/Μαυρίδου,
            Theodorou:Θεοδώρου, Katsaros/Katsarou:Κατσαρός/Κατσαρού, Stavrou:Σταύρου,
            Michailidis/Michailidou:Μιχαηλίδης/Μιχαηλίδου, Lambrou:Λάμπρου,
            Galanis/Galani:Γαλάνης/Γαλάνη, Raptis/Rapti:Ράπτης/Ράπτη""",
        native=0.7),
    "rom": dict(
        male="""Ion, Gheorghe, Vasile, Constantin, Mihai, Nicolae, Alexandru, Dumitru, Ștefan,
            Florin, Adrian, Cristian, Marius, Gabriel, Radu, Sorin, Ovidiu, Tudor, Cătălin,
            Lucian, Horia, Dan, Emil, Octavian""",
        female="""Ioana, Mihaela, Andreea, Alexandra, Raluca, Simona, Daniela, Roxana, Oana,
            Monica, Doina, Florentina, Ileana, Lavinia, Mirela, Corina, Anca, Diana, Camelia,
            Smaranda""",
        family="""Popescu, Ionescu, Popa, Pop, Radu, Dumitru, Stan, Stoica, Gheorghe, Matei,
            Ciobanu, Rusu, Munteanu, Constantin, Dinu, Mureșan, Tudor, Ene, Lungu, Barbu, Toma,
            Dobre, Florea, Nistor, Marin, Ursu, Sârbu, Dragomir, Iliescu, Enescu, Vlădescu,
            Țărănu, Avram, Cozma"""),
    "yug": dict(
        male="""Marko, Nikola, Miloš, Dragan, Zoran, Goran, Dejan, Nenad, Aleksandar, Đorđe,
            Dušan, Predrag, Slobodan, Bojan, Luka, Tomislav, Ante, Josip, Mirko, Branko, Damir,
            Hrvoje, Georgi, Hristo, Dimitar, Todor, Stoyan, Petar, Arben, Besnik, Ilir, Agron""",
        female="""Jelena, Milica, Marija, Ivana, Snežana, Dragana, Vesna, Biljana, Mirjana,
            Jasmina, Gordana, Tanja, Nataša, Danijela, Ljiljana, Branka, Zorica, Radka, Tsvetana,
            Desislava, Arta, Drita, Mimoza, Blerina""",
        family="""Jovanović, Petrović, Nikolić, Marković, Đorđević, Stojanović, Ilić, Stanković,
            Pavlović, Milošević, Popović, Kovačević, Horvat, Kovačić, Babić, Jurić, Knežević,
            Vuković, Perić, Tomić, Šimić, Radić, Mitrović, Georgiev, Dimitrov, Petkov, Todorov,
            Stoyanov, Angelov, Nikolov, Hristov, Kolev, Hoxha, Shehu, Krasniqi, Gashi, Berisha,
            Leka, Dervishi"""),
    "tur": dict(
        male="""Mehmet, Mustafa, Ahmet, Ali, Hüseyin, Hasan, İbrahim, İsmail, Osman, Yusuf,
            Murat, Ömer, Ramazan, Halil, Süleyman, Emre, Burak, Cem, Kemal, Orhan, Serkan, Tarık,
            Selim, Oğuz""",
        female="""Fatma, Ayşe, Emine, Hatice, Zeynep, Elif, Meryem, Şerife, Zehra, Hanife, Merve,
            Özlem, Esra, Gül, Derya, Sibel, Nur, Aslı, Ebru, Pınar, Gökçe, Yasemin, Deniz,
            Seda""",
        family="""Yılmaz, Kaya, Demir, Şahin, Çelik, Yıldız, Yıldırım, Öztürk, Aydın, Özdemir,
            Arslan, Doğan, Kılıç, Aslan, Çetin, Kara, Koç, Kurt, Özkan, Şimşek, Polat, Özcan,
            Korkmaz, Çakır, Erdoğan, Yavuz, Güneş, Aksoy, Tekin, Avcı"""),
    "ara": dict(
        male="""Mohammed, Ahmed, Hassan, Hussein, Omar, Khalid, Ibrahim, Youssef, Mahmoud,
            Abdullah, Karim, Tariq, Samir, Walid, Nabil, Rashid, Faisal, Jamal, Hamza, Bilal,
            Saeed, Amir, Nasser, Fouad, Ziad, Adel, Sami, Hisham, Tamer""",
        female="""Fatima, Aisha, Mariam, Layla, Zainab, Amina, Huda, Salma, Rania, Yasmin, Dalia,
            Nadia, Samira, Hana, Leila, Lina, Rana, Mona, Suha, Nour, Reem, Dina, Farah, Ghada,
            Widad""",
        family="""Haddad, Khoury, Nasser, Saleh, Hamdan, Mansour, Aziz, Abdallah, Hassan, Farouk,
            Khalil, Ibrahim, Suleiman, Darwish, Najjar, Sabbagh, Taha, Barakat, Ayoub, Kassab,
            Shalaby, Hijazi, El-Sayed, Al-Masri, Al-Rashid, Bakr, Jaber, Zaki, Habib, Karam,
            Fawzi, Murad, Qasim, Saad, Shami, Tawfik, Yassin, Bitar, Chahine, Alaoui, Benali,
            Bensaid, Belkacem, Mansouri, Ben Youssef, Trabelsi, Jaziri"""),
    "per": dict(
        male="""Reza, Mohammad, Hossein, Mehdi, Hamid, Javad, Majid, Farhad, Behrouz, Dariush,
            Kourosh, Babak, Arash, Kamran, Parviz, Siamak, Omid, Navid, Ahmad, Rostam, Sohrab""",
        female="""Fatemeh, Zahra, Maryam, Shirin, Nasrin, Mahnaz, Soraya, Azadeh, Roya, Niloufar,
            Golnar, Farnaz, Mitra, Laleh, Shabnam, Yasaman, Marjan, Setareh, Negar, Forough,
            Simin, Haleh""",
        family="""Hosseini, Mohammadi, Rezaei, Ahmadi, Karimi, Moradi, Jafari, Rahimi, Sadeghi,
            Kazemi, Ebrahimi, Hashemi, Ghasemi, Najafi, Mousavi, Esfahani, Farahani, Bahrami,
            Nouri, Asadi, Salehi, Amini, Yazdani, Rostami, Khorrami, Akbari, Jalali, Azizi,
            Sharifi, Golzar, Daneshvar, Kamali, Heidari, Safavi, Zand"""),
    "heb": dict(
        male="""Moshe, Yosef, Avraham, Yitzhak, Yaakov, Shlomo, Eitan, Ariel, Noam, Yonatan,
            Itai, Amit, Uri, Gil, Ronen, Ehud, Ilan, Oren, Shimon, Reuven, Meir, Nadav, Tomer,
            Avi, Doron""",
        female="""Rivka, Leah, Miriam, Tamar, Noa, Yael, Shira, Maya, Michal, Orly, Dana, Ayelet,
            Talia, Hila, Naama, Efrat, Galit, Hadas, Shoshana, Liora, Tova, Adina""",
        family="""Cohen, Levi, Mizrahi, Peretz, Biton, Dahan, Friedman, Malka, Azoulay, Katz,
            Shapiro, Goldberg, Rosenberg, Weiss, Levy, Ben-David, Ben-Ami, Shalev, Ashkenazi,
            Gold, Stern, Kaplan, Segal, Adler, Carmel, Barak, Golan, Peled, Rubin, Feldman,
            Weinberg, Rabinowitz, Horowitz, Perlman, Zilberman"""),
    "ind": dict(
        male="""Rahul, Amit, Rajesh, Suresh, Ramesh, Vijay, Sanjay, Anil, Sunil, Arun, Ravi,
            Kiran, Prakash, Deepak, Manoj, Ashok, Vikram, Arjun, Rohan, Anand, Siddharth,
            Abhishek, Karthik, Venkatesh, Srinivas, Gopal, Harish, Naveen, Subhash, Imran, Aamir,
            Farhan, Asif, Zubair, Rajiv, Mohan, Krishna, Aditya""",
        female="""Priya, Anjali, Sunita, Kavita, Pooja, Neha, Deepa, Lakshmi, Meera, Radha,
            Geeta, Asha, Rekha, Shreya, Divya, Ananya, Aishwarya, Kavya, Swati, Nandini, Padma,
            Usha, Savitri, Indira, Ayesha, Nasreen, Farzana, Rukhsana, Tahira, Sadia, Parveen,
            Nusrat, Shanthi, Malini, Vidya, Kamala, Bina""",
        family="""Sharma, Verma, Gupta, Singh, Kumar, Patel, Shah, Mehta, Joshi, Desai, Iyer,
            Iyengar, Nair, Menon, Pillai, Reddy, Rao, Naidu, Chatterjee, Banerjee, Mukherjee,
            Bose, Das, Ghosh, Sen, Dutta, Chakraborty, Mishra, Pandey, Tiwari, Srivastava,
            Agarwal, Kapoor, Malhotra, Khanna, Chopra, Bhatia, Sethi, Kulkarni, Deshpande, Jain,
            Khan, Qureshi, Siddiqui, Chaudhry, Malik, Hussain, Hossain, Chowdhury, Perera,
            Jayawardena, Wickramasinghe, Bandara, Gunawardena, Shrestha, Thapa, Gurung"""),
    "chn": dict(
        male="""Wei, Jun, Jie, Tao, Ming, Hao, Lei, Bin, Qiang, Gang, Peng, Chao, Long, Bo, Kai,
            Yong, Jian, Xin, Zhiwei, Jianguo, Guoqiang, Haoran, Zihao, Yifan, Junjie, Wenbin,
            Ka-wai, Chi-ming, Chih-hao, Kwok-leung""",
        female="""Fang, Na, Min, Jing, Xia, Yan, Hong, Ying, Lan, Mei, Juan, Xiu, Ling, Yun, Qing,
            Xiaoyan, Xiaomei, Lili, Dongmei, Guilan, Shuang, Wen, Yuqi, Xinyi, Zixuan, Ruoxi,
            Mei-ling, Chia-hui, Wai-man, Shu-fen""",
        family="""Wang, Li, Zhang, Liu, Chen, Yang, Huang, Zhao, Wu, Zhou, Xu, Sun, Ma, Zhu, Hu,
            Guo, He, Gao, Lin, Luo, Zheng, Liang, Xie, Song, Tang, Han, Feng, Deng, Cao, Zeng,
            Xiao, Tian, Dong, Pan, Yuan, Cai, Jiang, Du, Ye, Su, Lü, Ding, Shen, Chan, Wong,
            Cheung, Lau, Tsai, Hsu, Chiu""",
        family_first=True),
    "jpn": dict(
        male="""Hiroshi, Takashi, Kenji, Satoshi, Daisuke, Takeshi, Kazuo, Akira, Haruki, Kenta,
            Shōta, Ryōta, Yūsuke, Masato, Naoki, Tetsuya, Shinji, Kōji, Makoto, Ichirō, Jirō,
            Tarō, Yoshio, Tadashi, Noboru, Hideo, Kaito, Ren, Sōta""",
        female="""Yōko, Keiko, Yumiko, Akiko, Tomoko, Naoko, Kazuko, Sachiko, Michiko, Hiroko,
            Yuki, Aiko, Emi, Mai, Ayumi, Haruka, Misaki, Sakura, Yui, Hina, Rin, Mio, Nanami,
            Ayaka, Kaori, Megumi, Noriko, Chieko, Fumiko, Setsuko""",
        family="""Satō, Suzuki, Takahashi, Tanaka, Watanabe, Itō, Yamamoto, Nakamura, Kobayashi,
            Katō, Yoshida, Yamada, Sasaki, Yamaguchi, Matsumoto, Inoue, Kimura, Hayashi,
            Shimizu, Yamazaki, Mori, Abe, Ikeda, Hashimoto, Yamashita, Ishikawa, Nakajima, Maeda,
            Fujita, Ogawa, Gotō, Okada, Hasegawa, Murakami, Kondō, Ishii, Saitō, Sakamoto, Endō,
            Aoki, Fujii, Nishimura, Fukuda, Ōta, Miura, Takeuchi, Nakagawa, Okamoto, Matsuda,
            Harada, Nakano"""),
    "kor": dict(
        male="""Min-jun, Seo-jun, Ji-hoon, Hyun-woo, Jae-won, Sung-min, Dong-hyun, Young-ho,
            Sang-woo, Jin-ho, Tae-yang, Joon-ho, Seung-hoon, Kyung-soo, Chul-soo, Byung-hun""",
        female="""Ji-yeon, Seo-yeon, Min-ji, Soo-jin, Hye-jin, Eun-ji, Ji-won, Yoo-na, Hae-won,
            Mi-kyung, Young-hee, Su-bin, Ha-eun, Da-eun, Na-rae, Bo-ra""",
        family="""Kim, Lee, Park, Choi, Jung, Kang, Cho, Yoon, Jang, Lim, Han, Oh, Seo, Shin,
            Kwon, Hwang, Ahn, Song, Jeon, Hong, Yoo, Ko, Moon, Yang, Baek""",
        family_first=True),
    "vie": dict(
        male="""Văn An, Minh Tuấn, Quang Huy, Đức Anh, Hoàng Nam, Thành Long, Văn Hùng,
            Quốc Bảo, Tiến Dũng, Công Minh, Xuân Trường, Minh Khoa""",
        female="""Thị Lan, Thu Hà, Ngọc Anh, Thị Mai, Phương Linh, Thanh Hương, Kim Ngân,
            Bích Ngọc, Thị Hoa, Minh Châu, Hồng Nhung, Thùy Dung""",
        family="""Nguyễn, Trần, Lê, Phạm, Hoàng, Huỳnh, Phan, Vũ, Võ, Đặng, Bùi, Đỗ, Hồ, Ngô,
            Dương, Lý""",
        family_first=True),
    "sea": dict(
        male="""Somchai, Anan, Somsak, Kittisak, Prasert, Niran, Budi, Agus, Hendra, Rudi, Joko,
            Wahyu, Eko, Azman, Faizal, Rizal, Ramon, Emilio, Andres, Kyaw, Thant, Aung""",
        female="""Siriporn, Malee, Suda, Ratana, Kanya, Pim, Siti, Dewi, Sri, Wulan, Ratna,
            Putri, Ayu, Nurul, Aishah, Maricel, Imelda, Corazon, Khin, Thida""",
        family="""Bautista, Ocampo, Villanueva, Aquino, Dizon, Manalo, Tolentino, Soriano,
            Macaraeg, Srisuk, Chaiyaporn, Wongsawat, Thongchai, Saetang, Rattanakorn, Santoso,
            Wijaya, Halim, Susanto, Gunawan, Hartono, Pratama, Saputra, Kusuma, Ismail, Abdullah,
            Hamzah, Tan, Lim, Ong, Goh, Win, Htun"""),
    "waf": dict(
        male="""Chinedu, Emeka, Oluwaseun, Olumide, Adebayo, Babatunde, Chukwuma, Ikechukwu,
            Tunde, Femi, Kwame, Kofi, Kwabena, Yaw, Kojo, Ousmane, Mamadou, Moussa, Ibrahima,
            Abdoulaye, Cheikh, Ebenezer, Segun, Nnamdi, Obinna, Amadou, Seydou""",
        female="""Ngozi, Chiamaka, Adaeze, Folake, Funmilayo, Yetunde, Abimbola, Oluwakemi, Nneka,
            Chioma, Amaka, Ifeoma, Ama, Akosua, Abena, Efua, Adjoa, Aminata, Fatou, Awa, Mariama,
            Aissatou, Khadija, Binta, Bisi, Titilayo""",
        family="""Okafor, Okonkwo, Adeyemi, Ogunleye, Olawale, Eze, Nwosu, Obi, Chukwu, Balogun,
            Bello, Abubakar, Mensah, Owusu, Boateng, Asante, Osei, Appiah, Agyeman, Diallo,
            Traoré, Koné, Ndiaye, Diop, Sow, Camara, Keita, Sylla, Touré, Coulibaly, Fofana,
            Akinola, Adeleke"""),
    "eaf": dict(
        male="""Kamau, Otieno, Baraka, Juma, Tesfaye, Dawit, Yohannes, Tadesse, Abebe, Mulugeta,
            Musa, Jabari, Daudi, Godfrey, Moses, Emmanuel, Kiprotich, Ochieng, Haile, Yonas""",
        female="""Wanjiru, Akinyi, Njeri, Wambui, Achieng, Zawadi, Neema, Rehema, Halima, Tigist,
            Meseret, Selam, Hirut, Almaz, Makeda, Aster, Genet, Rukia, Mwajuma, Nafula,
            Nyambura, Atieno""",
        family="""Mwangi, Odhiambo, Kiprono, Kiptoo, Kipchoge, Njoroge, Wafula, Omondi, Mutua,
            Kimani, Wanjala, Bekele, Girma, Wolde, Gebre, Alemu, Kebede, Mengistu, Mwakyusa,
            Mollel, Massawe, Okello, Mugisha, Ssempala, Nsubuga, Tesfaye, Tadesse"""),
    "saf": dict(
        male="""Thabo, Sipho, Themba, Mandla, Bongani, Lwazi, Tendai, Tafadzwa, Farai,
            Kudakwashe, Kagiso, Tshepo, Mpho, Lindani, Vusumuzi, Pieter, Johan, Francois""",
        female="""Nomsa, Thandiwe, Zanele, Lindiwe, Nokuthula, Palesa, Lerato, Naledi, Rutendo,
            Chipo, Tsitsi, Nyasha, Busisiwe, Ntombi, Refilwe, Elsabé, Marietjie""",
        family="""Dlamini, Nkosi, Ndlovu, Khumalo, Mokoena, Mahlangu, Zulu, Mthembu, Sithole,
            Moyo, Ncube, Dube, Sibanda, Mutasa, Banda, Phiri, Mwale, Tembo, Botha, Venter,
            Coetzee, Nel, du Plessis, Steyn, Joubert, Fourie, van der Merwe, Swanepoel, Erasmus,
            le Roux"""),
}


@dataclass(frozen=True)
class NamePart:
    text: str
    native: str = ""
    fem_text: str = ""
    fem_native: str = ""


@dataclass(frozen=True)
class Pool:
    key: str
    male: tuple
    female: tuple
    family: tuple
    family_first: bool = False
    middle: float = 0.0
    double: float = 0.0
    native: float = 0.0


@dataclass(frozen=True)
class Name:
    full: str            # as it appears in the questions and at the start of the wiki line
    family: str          # how later sentences refer to the person ("Born in X, <family> ...")
    given: str
    female: bool
    native: str = ""     # the name in its own script ("" when none)


def _parse_entry(entry):
    latin, _, native = entry.partition(":")
    masc, _, fem = latin.partition("/")
    nmasc, _, nfem = native.partition("/")
    return NamePart(masc.strip(), nmasc.strip(), fem.strip(), nfem.strip())


def _parse_list(text):
    return tuple(_parse_entry(e) for e in text.replace("\n", " ").split(",") if e.strip())


def load_pools():
    pools = {}
    for key, spec in _POOL_TEXT.items():
        pools[key] = Pool(
            key=key,
            male=_parse_list(spec["male"]),
            female=_parse_list(spec["female"]),
            family=_parse_list(spec["family"]),
            family_first=spec.get("family_first", False),
            middle=spec.get("middle", 0.0),
            double=spec.get("double", 0.0),
            native=spec.get("native", 0.0),
        )
    for region, mix in REGION_POOLS.items():
        for key in mix:
            if key not in pools:
                raise ValueError(f"region {region} uses unknown pool {key}")
    return pools


POOLS = load_pools()


def _feminine(pool_key, part):
    """(latin, native) family name for a woman."""
    if part.fem_text:
        return part.fem_text, part.fem_native
    text, native = part.text, part.native
    if pool_key == "rus":
        if text.endswith("sky"):
            return text[:-1] + "aya", native[:-2] + "ая" if native else ""
        if text.endswith(("ov", "ev", "in", "yn")):
            return text + "a", native + "а" if native else ""
        return text, native
    if pool_key == "pol":
        for masc, fem in (("ski", "ska"), ("cki", "cka"), ("dzki", "dzka")):
            if text.endswith(masc):
                return text[: -len(masc)] + fem, ""
        return text, ""
    if pool_key == "cze":
        if text.endswith("ý"):
            return text[:-1] + "á", ""
        if text.endswith("a"):
            return text[:-1] + "ová", ""
        if text.endswith(("ek", "ec")):
            return text[:-2] + text[-1] + "ová", ""
        return text + "ová", ""
    if pool_key == "yug" and text.endswith(("ov", "ev")):
        return text + "a", ""
    return text, native


class NameMaker:
    """Draws unique names; `lean` is the chance that each part follows the birth region."""

    def __init__(self, rng, region_weights, lean):
        self.rng = rng
        self.lean = lean
        # world-wide pool mixture: regions weighted by their share of births
        mix = {}
        for region, w in region_weights.items():
            for key, pw in REGION_POOLS[region].items():
                mix[key] = mix.get(key, 0.0) + w * pw
        self.global_keys = list(mix)
        self.global_weights = [mix[k] for k in self.global_keys]
        self.taken = set()

    def _pool_for(self, region):
        if self.rng.random() < self.lean:
            mix = REGION_POOLS[region]
            key = self.rng.choices(list(mix), weights=list(mix.values()))[0]
        else:
            key = self.rng.choices(self.global_keys, weights=self.global_weights)[0]
        return POOLS[key]

    def draw(self, region, female):
        """A name (possibly used before: for spouses and relatives mentioned in passing)."""
        rng = self.rng
        gpool = self._pool_for(region)
        fpool = self._pool_for(region)
        given_list = gpool.female if female else gpool.male
        given = rng.choice(given_list)
        given_text, given_native = given.text, given.native
        if gpool.middle and rng.random() < gpool.middle:
            middle = rng.choice(given_list)
            if middle.text != given.text:
                given_text = f"{given_text} {middle.text}"
                given_native = ""
        fam = rng.choice(fpool.family)
        if female:
            fam_text, fam_native = _feminine(fpool.key, fam)
        else:
            fam_text, fam_native = fam.text, fam.native
        if fpool.double and rng.random() < fpool.double:
            second = rng.choice(fpool.family)
            if second.text != fam.text:
                fam_text = f"{fam_text} {second.text}"
                fam_native = ""
        if fpool.family_first:
            full = f"{fam_text} {given_text}"
        else:
            full = f"{given_text} {fam_text}"
        native = ""
        if given_native and fam_native and gpool.key == fpool.key and rng.random() < gpool.native:
            native = f"{given_native} {fam_native}"
        return Name(full, fam_text, given_text, female, native)

    def make(self, region, female, avoid=None):
        """A name not used before, in at most 200 draws; `avoid` is a string the name must not contain or be
        part of."""
        for _ in range(200):
            name = self.draw(region, female)
            if name.full in self.taken or name.given == name.family:
                continue
            if avoid and (avoid in name.full or name.full in avoid):
                continue
            self.taken.add(name.full)
            return name
        raise RuntimeError("could not draw a fresh name; the pools are too small for this world")
